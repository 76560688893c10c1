/**
 * BullMQ's deduplication on the ZooKeeper backend, simple mode: a duplicate
 * adds nothing and answers with the kept job (event `deduplicated`); the key
 * stops deduplicating once its job completed, failed or was removed, or the
 * key was removed; concurrent adds from several Queues add one job; zkq's
 * own Queue shares the keys; bad options are refused with a typed error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { InvalidArgumentError } from '@zkq/core';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, QueueEvents, FlowProducer } = withBackend(createZooKeeperBackend);

type Deduplicated = { jobId: string; deduplicationId: string; deduplicatedJobId: string };

test('a duplicate answers with the kept job, logs `deduplicated`, and adds nothing', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('simple', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen: Deduplicated[] = [];
  events.on('deduplicated', (args) => seen.push(args as Deduplicated));
  const queue = new Queue('simple', { connection });
  t.after(() => queue.close());

  const a1 = await queue.add('t', { n: 1 }, { jobId: 'a1', deduplication: { id: 'd' } });
  const a2 = await queue.add('t', { n: 2 }, { jobId: 'a2', deduplication: { id: 'd' } });
  assert.equal(a1.id, 'a1');
  assert.equal(a2.id, 'a1', 'the duplicate answers with the kept job');
  await waitFor(() => seen.length === 1, { what: 'the deduplicated event' });
  assert.deepEqual(seen[0], { jobId: 'a1', deduplicationId: 'd', deduplicatedJobId: 'a2' });
  assert.equal(await queue.getJob('a2'), undefined);
  assert.equal((await queue.getJob('a1'))?.deduplicationId, 'd');
  assert.equal(await queue.getDeduplicationJobId('d'), 'a1');
  assert.equal(await queue.getDeduplicationJobId('other'), null);
  assert.equal(await queue.getJobCountByTypes('waiting'), 1);

  // addBulk: a duplicate inside the bulk and one of the kept job
  const bulk = await queue.addBulk([
    { name: 'b', data: {}, opts: { deduplication: { id: 'e' } } },
    { name: 'b', data: {}, opts: { deduplication: { id: 'e' } } },
    { name: 'b', data: {}, opts: { deduplication: { id: 'd' } } },
    { name: 'b', data: {} },
  ]);
  const [first, dup, old, plain] = bulk.map((j) => j.id);
  assert.equal(dup, first);
  assert.equal(old, 'a1');
  assert.notEqual(plain, first);
  assert.equal(await queue.getJobCountByTypes('waiting'), 3);
});

test('the key stops deduplicating once its job completed or failed', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('finish', { connection });
  t.after(() => queue.close());
  const ok = await queue.add('ok', {}, { deduplication: { id: 'ok' } });
  const bad = await queue.add('bad', {}, { deduplication: { id: 'bad' } });
  const worker = new Worker(
    'finish',
    async (job) => {
      if (job.name === 'bad') throw new Error('boom');
      return 'done';
    },
    { connection },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await ok.getState()) === 'completed' && (await bad.getState()) === 'failed');
  assert.equal(await queue.getDeduplicationJobId('ok'), null);
  assert.equal(await queue.getDeduplicationJobId('bad'), null);
  const ok2 = await queue.add('ok', {}, { deduplication: { id: 'ok' } });
  const bad2 = await queue.add('bad', {}, { deduplication: { id: 'bad' } });
  assert.notEqual(ok2.id, ok.id);
  assert.notEqual(bad2.id, bad.id);
  await waitFor(async () => (await ok2.getState()) === 'completed' && (await bad2.getState()) === 'failed');
});

test('removing the job, draining the queue or removing the key ends deduplication', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('release', { connection });
  t.after(() => queue.close());

  const removed = await queue.add('r', {}, { deduplication: { id: 'r' } });
  await removed.remove();
  const afterRemove = await queue.add('r', {}, { deduplication: { id: 'r' } });
  assert.notEqual(afterRemove.id, removed.id);
  assert.equal(await queue.getDeduplicationJobId('r'), afterRemove.id);

  const drained = await queue.add('d', {}, { deduplication: { id: 'dr' } });
  await queue.drain();
  assert.equal(await queue.getDeduplicationJobId('dr'), null);
  assert.notEqual((await queue.add('d', {}, { deduplication: { id: 'dr' } })).id, drained.id);

  const kept = await queue.add('k', {}, { deduplication: { id: 'k' } });
  assert.equal(await queue.removeDeduplicationKey('k'), 1);
  assert.equal(await queue.removeDeduplicationKey('k'), 0);
  const next = await queue.add('k', {}, { deduplication: { id: 'k' } });
  assert.notEqual(next.id, kept.id);

  // Job.removeDeduplicationKey: only while the key still keeps that job
  assert.equal(await kept.removeDeduplicationKey(), false);
  assert.equal(await next.removeDeduplicationKey(), true);
  assert.equal(await queue.getDeduplicationJobId('k'), null);

  // removing a job another job's key keeps leaves that key alone
  const older = await queue.add('o', {}, { deduplication: { id: 'o' } });
  await queue.removeDeduplicationKey('o');
  const newer = await queue.add('o', {}, { deduplication: { id: 'o' } });
  await older.remove();
  assert.equal((await queue.add('o', {}, { deduplication: { id: 'o' } })).id, newer.id);
});

test('20 concurrent adds with one deduplication id from four Queues add one job', async (t) => {
  const { connection } = await bullEnv(t);
  const queues = Array.from({ length: 4 }, () => new Queue('race', { connection }));
  t.after(() => Promise.all(queues.map((q) => q.close())));
  await Promise.all(queues.map((q) => q.waitUntilReady()));
  const jobs = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      (queues[i % 4] as (typeof queues)[number]).add('race', { i }, { deduplication: { id: 'one' } }),
    ),
  );
  const ids = new Set(jobs.map((j) => j.id));
  assert.equal(ids.size, 1, `one kept job, got ${[...ids].join(', ')}`);
  const counts = await (queues[0] as (typeof queues)[number]).getJobCounts();
  assert.equal(
    Object.values(counts).reduce((a, b) => a + b, 0),
    1,
  );
  assert.equal(await (queues[1] as (typeof queues)[number]).getDeduplicationJobId('one'), [...ids][0]);
});

test("zkq's Queue and BullMQ's deduplicate against the same keys", async (t) => {
  const { env, connection } = await bullEnv(t);
  const bull = new Queue('shared', { connection });
  const zkq = new ZkqQueue('shared', env);
  t.after(() => Promise.all([bull.close(), zkq.close()]));
  const fromBull = await bull.add('x', { by: 'bullmq' }, { deduplication: { id: 's' } });
  const fromZkq = await zkq.add('x', { by: 'zkq' }, { deduplication: { id: 's' } });
  assert.equal(fromZkq.id, fromBull.id);
  assert.deepEqual(fromZkq.data, { by: 'bullmq' }, "zkq's Queue answers with the kept job");
  assert.equal(await zkq.getDeduplicationJobId('s'), fromBull.id);
  assert.equal(await zkq.removeDeduplicationKey('s'), 1);
  assert.equal(await bull.getDeduplicationJobId('s'), null);
});

test('bad deduplication options are refused with InvalidArgumentError, nothing added', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('bad', { connection });
  t.after(() => queue.close());
  const bad: unknown[] = [
    { id: 5 },
    { id: 'x', ttl: -1 },
    { id: 'x', ttl: 0 },
    { id: 'x', ttl: 'soon' },
    { id: 'x', ttl: Number.NaN },
    { id: 'x', extend: 'yes' },
    { id: 'x', keepLastIfActive: 1 },
    { id: 'x'.repeat(1001) },
  ];
  for (const deduplication of bad) {
    await assert.rejects(
      queue.add('t', {}, { deduplication } as never),
      (err: unknown) => err instanceof InvalidArgumentError && err.code === 'ZKQ_INVALID_ARGUMENT',
      JSON.stringify(deduplication),
    );
  }
  // BullMQ's own check comes first for a missing id
  await assert.rejects(queue.add('t', {}, { deduplication: { id: '' } }), /Deduplication id must be provided/);
  assert.equal(await queue.count(), 0);
});

test('a deduplication id with a lone surrogate is refused with InvalidArgumentError by add, addBulk and FlowProducer', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('surrogate', { connection });
  t.after(() => queue.close());
  const flows = new FlowProducer({ connection });
  t.after(() => flows.close());
  const isInvalid = (err: unknown) => err instanceof InvalidArgumentError && err.code === 'ZKQ_INVALID_ARGUMENT';
  for (const id of ['\uD800', 'a\uDC00b', 'end\uD83D']) {
    const what = JSON.stringify(id);
    await assert.rejects(queue.add('t', {}, { deduplication: { id } }), isInvalid, `add ${what}`);
    await assert.rejects(queue.addBulk([{ name: 't', data: {}, opts: { deduplication: { id } } }]), isInvalid, what);
    await assert.rejects(
      flows.add({ name: 'alone', queueName: 'surrogate', data: {}, opts: { deduplication: { id } } }),
      isInvalid,
      `FlowProducer ${what}`,
    );
  }
  const pair = await queue.add('t', {}, { deduplication: { id: 'ok\uD83D\uDE00' } });
  assert.equal(await queue.getDeduplicationJobId('ok\uD83D\uDE00'), pair.id);
  assert.equal(await queue.count(), 1);
});

test("a lone surrogate, empty or over-long deduplication id is refused with InvalidArgumentError by the key's reads and removals too", async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('surrogate-keys', { connection });
  t.after(() => queue.close());
  const kept = await queue.add('t', {}, { deduplication: { id: 'kept' } });
  const isInvalid = (err: unknown) => err instanceof InvalidArgumentError && err.code === 'ZKQ_INVALID_ARGUMENT';
  for (const id of ['\uD800', 'end\uD83D', '', 'x'.repeat(1001)]) {
    const what = JSON.stringify(id.slice(0, 10));
    await assert.rejects(queue.getDeduplicationJobId(id), isInvalid, `getDeduplicationJobId ${what}`);
    await assert.rejects(queue.removeDeduplicationKey(id), isInvalid, `Queue.removeDeduplicationKey ${what}`);
    // Job.removeDeduplicationKey reads the id from the job's options: one stored with a bad id cannot exist
  }
  assert.equal(await queue.getDeduplicationJobId('kept'), kept.id, 'nothing else touched');
  assert.equal(await kept.removeDeduplicationKey(), true);
});
