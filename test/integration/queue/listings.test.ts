/**
 * Every listing of a queue is bounded by one bucket's capacity
 * (BUCKET_CAPACITY), whatever the number of priorities, of jobs sharing a
 * delay, or of retained finished jobs; empty containers are removed. Checked
 * from outside (a walk of the queue's nodes, the sessions' listing stats),
 * never through directory names.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';
import { countNodes, largestListing, prefixSession } from '../../helpers/znodes.js';

/** More jobs than one bucket may list. */
const OVER_A_BUCKET = BUCKET_CAPACITY + 200;

test('after 1,000 distinct priorities drained, a scan of the idle queue costs a few reads; no empty lane stays', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('lanes', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  await queue.waitUntilReady();
  const baseline = await countNodes(plain, '/lanes');
  const priorities = 1000;
  await queue.addBulk(
    Array.from({ length: priorities }, (_, i) => ({
      name: 'p',
      data: {},
      opts: { priority: i + 1, removeOnComplete: true },
    })),
  );
  // No leader: the worker reads when it wakes for a job (and at its idle poll, every drainDelay).
  const worker = new Worker('lanes', async () => 'ok', { ...env, concurrency: 200, housekeeping: false });
  t.after(() => worker.close());
  let completed = 0;
  worker.on('completed', () => completed++);
  await waitFor(() => completed === priorities, { timeoutMs: 60_000, what: 'every priority drained' });
  const session = await worker.client;
  // One job from idle to idle: a scan finds it, the worker runs it, scans the empty queue and waits.
  const oneJob = async () => {
    const done = nextEvent(worker, 'completed');
    await queue.add('probe', {}, { removeOnComplete: true });
    await done;
  };
  for (let i = 0; i < 3; i++) await oneJob(); // warm-up: clean-up done by scans has happened
  const before = session.stats.requests;
  const cycles = 5;
  for (let i = 0; i < cycles; i++) await oneJob();
  const perCycle = (session.stats.requests - before) / cycles;
  assert.ok(perCycle <= 100, `one job between idle scans cost the worker ${perCycle} requests`);
  let extra = 0;
  await waitFor(
    async () => {
      extra = (await countNodes(plain, '/lanes')) - baseline;
      return extra <= 20;
    },
    { timeoutMs: 10_000, intervalMs: 500, what: 'empty lanes removed' },
  ).catch(() => undefined);
  assert.ok(extra <= 20, `the drained queue holds ${extra} more nodes than when it was new`);
});

test('jobs sharing one delay, more than a bucket of them: no listing holds more than a bucket', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('delays', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  await queue.addBulk(
    Array.from({ length: OVER_A_BUCKET }, () => ({
      name: 'd',
      data: {},
      opts: { delay: 3000, removeOnComplete: true },
    })),
  );
  const stored = await largestListing(plain, '/delays');
  assert.ok(
    stored.children <= BUCKET_CAPACITY,
    `${OVER_A_BUCKET} jobs with one delay: ${stored.path} lists ${stored.children} children`,
  );
  const worker = new Worker('delays', async () => 'ok', { ...env, concurrency: 100 });
  t.after(() => worker.close());
  let completed = 0;
  worker.on('completed', () => completed++);
  await waitFor(() => completed === OVER_A_BUCKET, { timeoutMs: 60_000, what: 'every delayed job run' });
  const { stats } = await worker.client;
  assert.ok(
    stats.maxChildren <= BUCKET_CAPACITY,
    `promoting them, the worker listed ${stats.maxChildren} children of ${stats.maxChildrenPath}`,
  );
});

test('retained finished jobs (removeOnComplete: false, removeOnFail by age only) are listed a bucket at a time', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('finished', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  const worker = new Worker(
    'finished',
    async (job) => {
      if (job.name === 'bad') throw new Error('fails on purpose');
      return 'ok';
    },
    { ...env, concurrency: 100 },
  );
  t.after(() => worker.close());
  let finished = 0;
  worker.on('completed', () => finished++);
  worker.on('failed', () => finished++);
  const jobs = (name: string, opts: object) => Array.from({ length: OVER_A_BUCKET }, () => ({ name, data: {}, opts }));
  await queue.addBulk(jobs('good', { removeOnComplete: false }));
  await queue.addBulk(jobs('bad', { removeOnFail: { age: 3600 } }));
  await waitFor(() => finished === 2 * OVER_A_BUCKET, { timeoutMs: 60_000, what: 'every job finished' });
  const counts = await queue.getJobCounts('completed', 'failed');
  assert.deepEqual(counts, { completed: OVER_A_BUCKET, failed: OVER_A_BUCKET }, 'all retained');
  const stored = await largestListing(plain, '/finished');
  assert.ok(
    stored.children <= BUCKET_CAPACITY,
    `${OVER_A_BUCKET} retained jobs of each kind: ${stored.path} lists ${stored.children} children`,
  );
});
