/**
 * BullMQ's deduplication modes on the ZooKeeper backend: throttle (`ttl`,
 * judged on ZooKeeper's clock, whatever became of the job), `extend` (the
 * key is written again: a new mtime), `replace` (a still-delayed kept job is
 * replaced), `reschedule` (a delayed kept job moves to the duplicate's
 * delay) and `keepLastIfActive` (the latest duplicate of a running job runs
 * after it, never beside it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { QueueLayout } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { testSession, waitFor } from '../../helpers/zk.js';

const { Queue, Worker, QueueEvents } = withBackend(createZooKeeperBackend);

async function bullEnv(t: { name?: string; after(fn: () => unknown): void }) {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  // a session in the queues' namespace, to look at key nodes
  const session = await testSession(t, { namespace: `/${env.prefix}` });
  return { env, connection, session };
}

type Deduplicated = { jobId: string; deduplicationId: string; deduplicatedJobId: string };

/** A gate a processor waits at until the test opens it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

test('ttl: duplicates are throttled until the ttl runs out, even after the job completed and was removed', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('throttle', { connection });
  t.after(() => queue.close());

  // a long ttl outlives its job: completed and removed, it still throttles (as on Redis)
  const long = await queue.add('l', {}, { deduplication: { id: 'long', ttl: 600_000 }, removeOnComplete: true });
  const worker = new Worker('throttle', async () => 'ok', { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJob(long.id as string)) === undefined, { what: 'the job removed' });
  assert.equal((await queue.add('l', {}, { deduplication: { id: 'long', ttl: 600_000 } })).id, long.id);
  assert.equal(await queue.getDeduplicationJobId('long'), long.id);
  await worker.close();

  // a short one runs out: poll until an add gets through
  const first = await queue.add('s', {}, { deduplication: { id: 'short', ttl: 300 } });
  const later = await waitFor(
    async () => {
      const job = await queue.add('s', {}, { deduplication: { id: 'short', ttl: 300 } });
      return job.id !== first.id ? job : undefined;
    },
    { what: 'the ttl to run out' },
  );
  assert.equal(await queue.getDeduplicationJobId('short'), later.id);

  // removing the kept job releases a ttl key too
  const held = await queue.add('h', {}, { deduplication: { id: 'held', ttl: 600_000 } });
  await held.remove();
  assert.notEqual((await queue.add('h', {}, { deduplication: { id: 'held', ttl: 600_000 } })).id, held.id);
});

test('extend: each duplicate writes the key again (a new mtime); without it the key is left alone', async (t) => {
  const { connection, session } = await bullEnv(t);
  const queue = new Queue('extend', { connection });
  t.after(() => queue.close());
  const layout = new QueueLayout('extend');
  const mtime = async (id: string) => (await session.exists(layout.dedupKey(id)))?.mtime;

  const kept = await queue.add('e', {}, { deduplication: { id: 'ext', ttl: 600_000, extend: true } });
  const before = await session.exists(layout.dedupKey('ext'));
  assert.ok(before);
  const dup = await queue.add('e', {}, { deduplication: { id: 'ext', ttl: 600_000, extend: true } });
  assert.equal(dup.id, kept.id);
  const after = await session.exists(layout.dedupKey('ext'));
  assert.equal(after?.version, before.version + 1, 'extend rewrote the key');

  const plain = await queue.add('p', {}, { deduplication: { id: 'plain', ttl: 600_000 } });
  const m0 = await mtime('plain');
  const v0 = (await session.exists(layout.dedupKey('plain')))?.version;
  assert.equal((await queue.add('p', {}, { deduplication: { id: 'plain', ttl: 600_000 } })).id, plain.id);
  assert.equal(await mtime('plain'), m0);
  assert.equal((await session.exists(layout.dedupKey('plain')))?.version, v0, 'no write without extend');
});

test('replace: a duplicate replaces the kept job while it is delayed, not once it waits', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('replace', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen: Deduplicated[] = [];
  const removed: string[] = [];
  events.on('deduplicated', (args) => seen.push(args as Deduplicated));
  events.on('removed', ({ jobId }) => removed.push(jobId));
  const queue = new Queue('replace', { connection });
  t.after(() => queue.close());

  const opts = { deduplication: { id: 'r', replace: true, ttl: 600_000 }, delay: 600_000 };
  const a = await queue.add('r', { v: 'a' }, opts);
  const b = await queue.add('r', { v: 'b' }, opts);
  assert.notEqual(b.id, a.id, 'the duplicate was added');
  assert.equal(await queue.getJob(a.id as string), undefined, 'the delayed kept job was removed');
  assert.equal(await queue.getDeduplicationJobId('r'), b.id);
  assert.equal(await b.getState(), 'delayed');
  await waitFor(() => seen.length === 1 && removed.length === 1, { what: 'removed and deduplicated events' });
  assert.deepEqual(seen[0], { jobId: b.id, deduplicationId: 'r', deduplicatedJobId: a.id });
  assert.deepEqual(removed, [a.id]);

  // once the kept job waits, a duplicate is deduplicated (and BullMQ logs no event for it)
  await b.promote();
  const c = await queue.add('r', { v: 'c' }, opts);
  assert.equal(c.id, b.id);
  assert.equal((await queue.getJob(b.id as string))?.data.v, 'b');
  assert.equal(await queue.getJobCountByTypes('waiting', 'delayed'), 1);
});

test('reschedule: a duplicate moves the delayed kept job to its own delay', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('reschedule', { connection });
  t.after(() => queue.close());
  const kept = await queue.add('r', { v: 1 }, { deduplication: { id: 'rs', reschedule: true }, delay: 600_000 });
  const dup = await queue.add('r', { v: 2 }, { deduplication: { id: 'rs', reschedule: true }, delay: 50 });
  assert.equal(dup.id, kept.id);
  const moved = await queue.getJob(kept.id as string);
  assert.equal(moved?.delay, 50);
  assert.deepEqual(moved?.data, { v: 1 }, 'the kept job keeps its data');
  const worker = new Worker('reschedule', async (job) => job.data.v, { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJob(kept.id as string))?.returnvalue === 1, {
    what: 'the rescheduled job to run',
  });
});

test('keepLastIfActive: the latest duplicate of a running job runs after it, with its own id and data', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('last', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen: Deduplicated[] = [];
  events.on('deduplicated', (args) => seen.push(args as Deduplicated));
  const queue = new Queue('last', { connection });
  t.after(() => queue.close());
  const first = gate();
  const started = gate();
  const ran: { id: string; data: unknown }[] = [];
  let running = 0;
  let most = 0;
  const worker = new Worker(
    'last',
    async (job) => {
      running++;
      most = Math.max(most, running);
      if (ran.length === 0) {
        started.open();
        await first.wait;
      }
      ran.push({ id: job.id as string, data: job.data });
      running--;
    },
    { connection, concurrency: 4 },
  );
  t.after(() => worker.close());
  const opts = (jobId: string) => ({ jobId, deduplication: { id: 'kl', keepLastIfActive: true, ttl: 100 } });

  const one = await queue.add('k', { seq: 1 }, opts('one'));
  await started.wait;
  const two = await queue.add('k', { seq: 2 }, opts('two'));
  const three = await queue.add('k', { seq: 3 }, opts('three'));
  assert.equal(two.id, 'one');
  assert.equal(three.id, 'one');
  assert.equal(await queue.getJob('two'), undefined, 'parked, not added');
  assert.equal(await queue.getDeduplicationJobId('kl'), 'one', 'ttl is ignored with keepLastIfActive');
  first.open();
  await waitFor(() => ran.length === 2, { what: 'the parked job to run' });
  assert.deepEqual(ran, [
    { id: 'one', data: { seq: 1 } },
    { id: 'three', data: { seq: 3 } },
  ]);
  assert.equal(most, 1, 'never two at once');
  await waitFor(() => seen.length === 2, { what: 'two deduplicated events' });
  assert.deepEqual(
    seen.map((s) => s.deduplicatedJobId),
    ['two', 'three'],
  );
  assert.ok(seen.every((s) => s.jobId === 'one' && s.deduplicationId === 'kl'));
  assert.equal(await one.getState(), 'completed');

  // a duplicate of a waiting (not running) job is deduplicated, not parked
  await worker.pause();
  const idle = await queue.add('k', { seq: 4 }, opts('four'));
  assert.equal((await queue.add('k', { seq: 5 }, opts('five'))).id, idle.id);
  worker.resume();
  await waitFor(() => ran.length === 3, { what: 'the fourth job' });
  await waitFor(async () => (await queue.getDeduplicationJobId('kl')) === null, { what: 'the key released' });
  assert.deepEqual(ran[2], { id: 'four', data: { seq: 4 } });
});

test('keepLastIfActive: the parked job is added when the running one fails for good, not on a retry', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('last-fail', { connection });
  t.after(() => queue.close());
  const started = gate();
  const release = gate();
  const ran: unknown[] = [];
  const worker = new Worker(
    'last-fail',
    async (job) => {
      ran.push(job.data.seq);
      if (job.data.seq === 1) {
        started.open();
        await release.wait;
        throw new Error('fails every time');
      }
    },
    { connection },
  );
  t.after(() => worker.close());
  const dedup = { id: 'kf', keepLastIfActive: true };
  const one = await queue.add('k', { seq: 1 }, { deduplication: dedup, attempts: 2, backoff: 10 });
  await started.wait;
  const two = await queue.add('k', { seq: 2 }, { deduplication: dedup, delay: 20 });
  assert.equal(two.id, one.id);
  release.open();
  await waitFor(async () => (await one.getState()) === 'failed', { what: 'the first job to fail for good' });
  await waitFor(() => ran.includes(2), { what: 'the parked job to run' });
  assert.deepEqual(ran, [1, 1, 2], 'the parked job ran after the last attempt only');
});
