/**
 * BullMQ's Queue getters on the ZooKeeper backend: counts, pages of jobs in
 * Redis's orders, job states, per-priority counts, a paused queue's waiting
 * jobs (still `waiting`, as on Redis), and the global concurrency check.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue as ZkqQueue } from '@zkq/producer';
import { type JobType, withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

const PAUSED = 'paused' as JobType;
const idsOf = (jobs: { id?: string | undefined }[]) => jobs.map((j) => j.id);

test('getJobCounts, getJobs and getJobState name every state as BullMQ does on Redis', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('states', { connection });
  t.after(() => queue.close());

  // two completed and one failed job, finished in this order
  const c1 = await queue.add('c', { n: 1 });
  const c2 = await queue.add('c', { n: 2 });
  const f1 = await queue.add('f', { fail: true });
  const finisher = new Worker(
    'states',
    async (job) => {
      if (job.data.fail) throw new Error('no');
      return job.data.n;
    },
    { connection },
  );
  await waitFor(async () => {
    const c = await queue.getJobCounts('completed', 'failed');
    return c.completed === 2 && c.failed === 1;
  });
  await finisher.close();

  // one job held active by a worker with room for one
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const a1 = await queue.add('a', {});
  const holder = new Worker('states', () => held, { connection, concurrency: 1 });
  t.after(async () => {
    release();
    await holder.close();
  });
  await waitFor(async () => (await queue.getJobState(a1.id as string)) === 'active');

  const w1 = await queue.add('w', {});
  const w2 = await queue.add('w', {});
  const w3 = await queue.add('w', {});
  const l1 = await queue.add('l', {}, { lifo: true });
  const l2 = await queue.add('l', {}, { lifo: true });
  const p5 = await queue.add('p', {}, { priority: 5 });
  const p2a = await queue.add('p', {}, { priority: 2 });
  const p2b = await queue.add('p', {}, { priority: 2 });
  const dueAt = Date.now();
  const d1 = await queue.add('d', {}, { delay: 60_000 });
  const d2 = await queue.add('d', {}, { delay: 120_000 });

  assert.deepEqual(await queue.getJobCounts(), {
    active: 1,
    completed: 2,
    delayed: 2,
    failed: 1,
    prioritized: 3,
    waiting: 5,
    'waiting-children': 0,
  });
  // `paused` is a pre-v6 list name (no longer a JobType): Redis still counts it, and it is empty
  assert.deepEqual(await queue.getJobCounts('wait', PAUSED, 'repeat'), { wait: 5, paused: 0, repeat: 0 });
  assert.equal(await queue.count(), 5 + 2 + 3);
  assert.deepEqual(await queue.getCountsPerPriority([0, 2, 5, 7]), { 0: 5, 2: 2, 5: 1, 7: 0 });
  // delayed jobs due before a time (BullMQ's delayedTimestamp): d1 only
  assert.equal(await queue.getDelayedCount(dueAt + 90_000), 1);
  assert.equal(await queue.getDelayedCount(dueAt), 0);

  // pages, in the orders Redis keeps: waiting in serving order (lifo first), the rest by score
  assert.deepEqual(idsOf(await queue.getWaiting()), idsOf([l2, l1, w1, w2, w3]));
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 0, 2, true)), idsOf([l2, l1, w1]));
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 0, 1, false)), idsOf([w3, w2]));
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], -2, -1, true)), idsOf([w2, w3]));
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 10, 12, true)), []);
  assert.deepEqual(idsOf(await queue.getPrioritized()), idsOf([p2a, p2b, p5]));
  assert.deepEqual(idsOf(await queue.getDelayed()), idsOf([d1, d2]));
  assert.deepEqual(idsOf(await queue.getActive()), idsOf([a1]));
  assert.deepEqual(idsOf(await queue.getCompleted()), idsOf([c2, c1])); // newest first
  assert.deepEqual(idsOf(await queue.getJobs('completed', -300, 99_999, true)), idsOf([c1, c2]));
  assert.deepEqual(idsOf(await queue.getFailed()), idsOf([f1]));
  assert.equal((await queue.getJobs()).length, 1 + 2 + 2 + 1 + 3 + 5);
  assert.deepEqual(idsOf(await queue.getJobs(['wait', 'waiting', 'waiting'])), idsOf(await queue.getJobs(['wait'])));

  const states = await Promise.all([w1, l1, p5, d1, a1, c1, f1].map((j) => queue.getJobState(j.id as string)));
  assert.deepEqual(states, ['waiting', 'waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed']);
  assert.equal(await queue.getJobState('no-such-job'), 'unknown');
  const job = async (id: string | undefined) => {
    const found = await queue.getJob(id as string);
    assert.ok(found);
    return found;
  };
  assert.equal(await (await job(w1.id)).isWaiting(), true);
  assert.equal(await (await job(p5.id)).isWaiting(), false); // prioritized is not waiting on Redis either
  assert.equal(await (await job(a1.id)).isActive(), true);
  assert.equal(await (await job(d1.id)).isDelayed(), true);
  assert.equal(await (await job(c1.id)).isCompleted(), true);
  assert.equal(await (await job(f1.id)).isFailed(), true);
  assert.equal(await (await job(w1.id)).isWaitingChildren(), false);
  const backend = queue.getBackend();
  assert.equal(await backend.isJobInState('paused', w1.id as string), false);
  assert.equal(await backend.isJobInState('wait', l1.id as string), true);
  assert.equal(await backend.isJobInState('prioritized', p2a.id as string), true);
  await assert.rejects(backend.isJobInState('bogus', w1.id as string), /Unknown job state: bogus/);

  // global concurrency: one active job maxes a limit of one
  assert.equal(await queue.isMaxed(), false);
  await queue.setGlobalConcurrency(1);
  assert.equal(await queue.isMaxed(), true);
  await queue.setGlobalConcurrency(2);
  assert.equal(await queue.isMaxed(), false);

  // paused (here by zkq's Queue, one store): waiting jobs stay waiting, as BullMQ 6 keeps them in `wait`
  const zkq = new ZkqQueue('states', env);
  t.after(() => zkq.close());
  await zkq.pause();
  assert.equal(await queue.isPaused(), true);
  assert.deepEqual(await queue.getJobCounts('waiting', PAUSED, 'prioritized'), {
    waiting: 5,
    paused: 0,
    prioritized: 3,
  });
  assert.deepEqual(idsOf(await queue.getWaiting()), idsOf([l2, l1, w1, w2, w3]));
  assert.deepEqual(await queue.getCountsPerPriority([0, 2]), { 0: 5, 2: 2 });
  assert.equal(await (await job(w2.id)).isWaiting(), true);
  assert.equal(await queue.getJobState(w2.id as string), 'waiting');
  await zkq.resume();
  assert.equal(await queue.isPaused(), false);
});

test('pages past a bucket skip whole buckets and stay in order; the per-priority counts leave out active jobs', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('pages', { connection });
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 2500 }, (_, i) => ({ name: 'j', data: { i } })));
  const ids = idsOf(jobs);
  assert.equal(await queue.getWaitingCount(), 2500);
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 2100, 2104, true)), ids.slice(2100, 2105));
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 0, 2, false)), ids.slice(-3).reverse());
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], -3, -1, true)), ids.slice(-3));

  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const holder = new Worker('pages', () => held, { connection, concurrency: 2 });
  t.after(async () => {
    release();
    await holder.close();
  });
  await waitFor(async () => (await queue.getActiveCount()) === 2);
  assert.equal(await queue.getWaitingCount(), 2498);
  assert.deepEqual(await queue.getCountsPerPriority([0]), { 0: 2498 });
  // the first two are running: the waiting page starts after them
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 0, 1, true)), ids.slice(2, 4));
  assert.deepEqual(idsOf(await queue.getJobs(['waiting'], 2098, 2099, true)), ids.slice(2100, 2102));
  assert.deepEqual(idsOf(await queue.getActive()).sort(), ids.slice(0, 2).sort());
});
