/**
 * zkq's own Queue with BullMQ's `opts.deduplication`: simple mode, throttle
 * (ttl on ZooKeeper's clock), replace, keepLastIfActive with zkq's Worker,
 * the key reads and removals, concurrent adds from several Queues, an
 * obliterated queue, and bad input refused with InvalidArgumentError.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@zkq/core';
import { FlowProducer, Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

type Deduplicated = { jobId: string; deduplicationId: string; deduplicatedJobId: string };

test('a duplicate resolves with the kept job until that job completes', async (t) => {
  const env = await queueEnv(t);
  const events = new QueueEvents('simple', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen: Deduplicated[] = [];
  events.on('deduplicated', (args) => seen.push(args));
  const queue = new Queue('simple', env);
  t.after(() => queue.close());

  const kept = await queue.add('mail', { to: 'a' }, { deduplication: { id: 'user-1' } });
  const dup = await queue.add('mail', { to: 'b' }, { deduplication: { id: 'user-1' } });
  assert.equal(dup.id, kept.id);
  assert.deepEqual(dup.data, { to: 'a' }, 'the kept job, as stored');
  assert.equal(await queue.count(), 1);
  assert.equal(await queue.getDeduplicationJobId('user-1'), kept.id);
  await waitFor(() => seen.length === 1, { what: 'the deduplicated event' });
  assert.equal(seen[0]?.jobId, kept.id);
  assert.equal(seen[0]?.deduplicationId, 'user-1');
  assert.notEqual(seen[0]?.deduplicatedJobId, kept.id);

  const worker = new Worker('simple', async (job) => job.data.to, env);
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJob(kept.id))?.returnvalue === 'a', { what: 'the kept job to run' });
  assert.equal(await queue.getDeduplicationJobId('user-1'), null);
  const again = await queue.add('mail', { to: 'c' }, { deduplication: { id: 'user-1' } });
  assert.notEqual(again.id, kept.id);
  await waitFor(async () => (await queue.getJob(again.id))?.returnvalue === 'c', { what: 'the new job to run' });
});

test('throttle: a ttl key outlives its job, and runs out on its own', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('throttle', env);
  t.after(() => queue.close());
  const long = { deduplication: { id: 'long', ttl: 600_000 }, removeOnComplete: true };
  const first = await queue.add('t', {}, long);
  const worker = new Worker('throttle', async () => 'ok', env);
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJob(first.id)) === undefined, { what: 'the job done and removed' });
  assert.equal((await queue.add('t', {}, long)).id, first.id, 'still throttled');

  const short = await queue.add('s', {}, { deduplication: { id: 'short', ttl: 300 } });
  const later = await waitFor(
    async () => {
      const job = await queue.add('s', {}, { deduplication: { id: 'short', ttl: 300 } });
      return job.id !== short.id ? job : undefined;
    },
    { what: 'the ttl to run out' },
  );
  assert.equal(await queue.getDeduplicationJobId('short'), later.id);
});

test('replace swaps a delayed kept job; removeDeduplicationKey frees the id', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('replace', env);
  t.after(() => queue.close());
  const opts = { deduplication: { id: 'r', replace: true }, delay: 600_000 };
  const a = await queue.add('r', { v: 'a' }, opts);
  const b = await queue.add('r', { v: 'b' }, opts);
  assert.notEqual(b.id, a.id);
  assert.equal(await queue.getJob(a.id), undefined);
  assert.equal(await queue.getJobState(b.id), 'delayed');

  assert.equal(await queue.removeDeduplicationKey('r'), 1);
  assert.equal(await queue.getDeduplicationJobId('r'), null);
  const c = await queue.add('r', { v: 'c' }, { deduplication: { id: 'r' } });
  assert.notEqual(c.id, b.id);
  assert.equal(await queue.getJobCountByTypes('delayed', 'waiting'), 2);
});

test("keepLastIfActive with zkq's Worker: the latest duplicate runs after the running job", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('last', env);
  t.after(() => queue.close());
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let started = () => {};
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const ran: unknown[] = [];
  const worker = new Worker(
    'last',
    async (job) => {
      if (ran.length === 0) {
        started();
        await gate;
      }
      ran.push(job.data.seq);
    },
    { ...env, concurrency: 3 },
  );
  t.after(() => worker.close());
  const dedup = { id: 'kl', keepLastIfActive: true };
  const one = await queue.add('k', { seq: 1 }, { deduplication: dedup });
  await running;
  for (const seq of [2, 3, 4]) assert.equal((await queue.add('k', { seq }, { deduplication: dedup })).id, one.id);
  open();
  await waitFor(() => ran.length === 2, { what: 'the parked job to run' });
  assert.deepEqual(ran, [1, 4]);
  await waitFor(async () => (await queue.getDeduplicationJobId('kl')) === null, { what: 'the key released' });
});

test('20 concurrent adds with one deduplication id from four Queues add one job', async (t) => {
  const env = await queueEnv(t);
  const queues = Array.from({ length: 4 }, () => new Queue('race', env));
  t.after(() => Promise.all(queues.map((q) => q.close())));
  await Promise.all(queues.map((q) => q.waitUntilReady()));
  const jobs = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      (queues[i % 4] as Queue).add('race', { i }, { deduplication: { id: 'one', ttl: 600_000 } }),
    ),
  );
  assert.equal(new Set(jobs.map((j) => j.id)).size, 1);
  assert.equal(await (queues[2] as Queue).count(), 1);
});

test('an obliterated queue deduplicates again from scratch', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('gone', env);
  t.after(() => queue.close());
  const dedup = { id: 'g', ttl: 600_000 };
  const old = await queue.add('g', {}, { deduplication: dedup });
  assert.equal((await queue.add('g', {}, { deduplication: dedup })).id, old.id);
  await queue.obliterate();
  const fresh = new Queue('gone', env);
  t.after(() => fresh.close());
  assert.equal(await fresh.getDeduplicationJobId('g'), null, 'the key went with the queue');
  const job = await fresh.add('g', {}, { deduplication: dedup });
  assert.equal(await fresh.getDeduplicationJobId('g'), job.id);
  assert.equal((await fresh.add('g', {}, { deduplication: dedup })).id, job.id);
  assert.equal(await fresh.count(), 1);
});

test('bad deduplication input is refused with InvalidArgumentError, nothing added', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('bad', env);
  t.after(() => queue.close());
  const isInvalid = (argument: string) => (err: unknown) =>
    err instanceof InvalidArgumentError && err.code === 'ZKQ_INVALID_ARGUMENT' && err.argument === argument;
  const cases: [unknown, string][] = [
    [null, 'opts.deduplication'],
    ['id', 'opts.deduplication'],
    [{}, 'opts.deduplication.id'],
    [{ id: '' }, 'opts.deduplication.id'],
    [{ id: 7 }, 'opts.deduplication.id'],
    [{ id: 'x', ttl: 0 }, 'opts.deduplication.ttl'],
    [{ id: 'x', ttl: -5 }, 'opts.deduplication.ttl'],
    [{ id: 'x', ttl: Number.POSITIVE_INFINITY }, 'opts.deduplication.ttl'],
    [{ id: 'x', replace: 'true' }, 'opts.deduplication.replace'],
    [{ id: 'x', reschedule: 0 }, 'opts.deduplication.reschedule'],
  ];
  for (const [deduplication, argument] of cases) {
    await assert.rejects(
      queue.add('t', {}, { deduplication } as never),
      isInvalid(argument),
      JSON.stringify(deduplication),
    );
    await assert.rejects(
      queue.addBulk([{ name: 't', data: {}, opts: { deduplication } as never }]),
      isInvalid(argument),
    );
  }
  await assert.rejects(queue.getDeduplicationJobId(''), InvalidArgumentError);
  await assert.rejects(queue.removeDeduplicationKey(3 as never), InvalidArgumentError);
  assert.equal(await queue.count(), 0);
});

test('a deduplication id with a lone surrogate is refused with InvalidArgumentError at every entry, nothing added', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('surrogate', env);
  t.after(() => queue.close());
  const flows = new FlowProducer(env);
  t.after(() => flows.close());
  const isInvalid = (err: unknown) =>
    err instanceof InvalidArgumentError &&
    err.code === 'ZKQ_INVALID_ARGUMENT' &&
    err.argument?.endsWith('deduplication.id') === true;
  for (const id of ['\uD800', 'a\uDC00b', 'end\uD83D']) {
    const what = JSON.stringify(id);
    await assert.rejects(queue.add('t', {}, { deduplication: { id } }), isInvalid, `add ${what}`);
    await assert.rejects(queue.addBulk([{ name: 't', data: {}, opts: { deduplication: { id } } }]), isInvalid, what);
    await assert.rejects(queue.getDeduplicationJobId(id), isInvalid, `getDeduplicationJobId ${what}`);
    await assert.rejects(queue.removeDeduplicationKey(id), isInvalid, `removeDeduplicationKey ${what}`);
    await assert.rejects(
      flows.add(
        { name: 'root', queueName: 'surrogate', data: {} },
        { queuesOptions: { surrogate: { defaultJobOptions: { deduplication: { id } } as never } } },
      ),
      isInvalid,
      `FlowProducer defaults ${what}`,
    );
  }
  // a well-formed pair is a usable id
  const pair = await queue.add('t', {}, { deduplication: { id: 'ok\uD83D\uDE00' } });
  assert.equal(await queue.getDeduplicationJobId('ok\uD83D\uDE00'), pair.id);
  assert.equal(await queue.count(), 1);
});
