/**
 * Regressions with no fault injected: transactions that must fit ZooKeeper's
 * packet limit whatever the record sizes, and a lane's tail bucket that
 * another producer rolled and the head scan removed. With nothing going
 * wrong, a worker must report no error, lose no job, and run each job once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { type BulkJob, Queue } from '@zkq/producer';
import { Worker, type WorkerOptions } from '@zkq/worker';
import { type QueueTestEnv, queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

type Processor = (job: { id: string; name: string; attemptsMade: number }) => Promise<unknown>;

/** A worker that counts processor starts per job id and keeps what it reports. */
function watchedWorker(
  t: { after(fn: () => unknown): void },
  env: QueueTestEnv,
  queue: string,
  processor: Processor,
  opts: Partial<WorkerOptions> = {},
) {
  const runs = new Map<string, number>();
  const completed = new Map<string, unknown>();
  const errors: Error[] = [];
  const lost: string[] = [];
  const worker = new Worker(
    queue,
    async (job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      return processor(job);
    },
    { ...env, ...opts },
  );
  worker.on('completed', (job, result) => completed.set(job.id, result));
  worker.on('error', (err) => errors.push(err));
  worker.on('lost', (job) => lost.push(job.id));
  t.after(() => worker.close());
  /** Fails at once with what the worker reported when something went wrong instead. */
  const healthy = (what: string) => {
    assert.deepEqual(
      errors.map((e) => e.message),
      [],
      `${what}: the worker reported errors`,
    );
    assert.deepEqual(lost, [], `${what}: the worker lost jobs nobody else claimed`);
  };
  return { worker, runs, completed, errors, lost, healthy };
}

async function allCompleted(w: ReturnType<typeof watchedWorker>, ids: string[], what: string): Promise<void> {
  await waitFor(() => w.errors.length > 0 || w.lost.length > 0 || ids.every((id) => w.completed.has(id)), {
    timeoutMs: 30_000,
    what,
  });
  w.healthy(what);
}

// ---- every transaction fits the packet limit ------------------------------

test('claims fit one transaction: 300 jobs of 12 KB at concurrency 100 all run, once each', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('budget-claims', env);
  t.after(() => queue.close());
  const blob = 'x'.repeat(12 * 1024);
  const jobs = await queue.addBulk(Array.from({ length: 300 }, (_, i) => ({ name: 'big', data: { i, blob } })));
  const w = watchedWorker(t, env, 'budget-claims', async () => 'ok', { concurrency: 100 });
  await allCompleted(
    w,
    jobs.map((j) => j.id),
    'all 300 jobs completed',
  );
  for (const j of jobs) assert.equal(w.runs.get(j.id), 1, `job ${j.id} ran once`);
});

test('claims fit one transaction: 4 jobs of 300 KB at concurrency 4 all run, once each', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('budget-large', env);
  t.after(() => queue.close());
  const blob = 'y'.repeat(300 * 1024);
  const jobs = await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'large', data: { i, blob } })));
  const w = watchedWorker(t, env, 'budget-large', async () => 'ok', { concurrency: 4 });
  await allCompleted(
    w,
    jobs.map((j) => j.id),
    'all 4 jobs completed',
  );
  for (const j of jobs) assert.equal(w.runs.get(j.id), 1, `job ${j.id} ran once`);
});

test('finishes fit one transaction: three 400 KB results finishing together are all recorded, each job run once', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('budget-finish', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'result', data: { i } })));
  const result = 'r'.repeat(400 * 1024);
  // The three processors return in the same turn, so their outcomes are written together.
  let started = 0;
  let allStarted!: () => void;
  const together = new Promise<void>((r) => {
    allStarted = r;
  });
  const w = watchedWorker(
    t,
    env,
    'budget-finish',
    async () => {
      if (++started === jobs.length) allStarted();
      await together;
      return result;
    },
    { concurrency: 3, lockDuration: 4000, stalledInterval: 500 },
  );
  await allCompleted(
    w,
    jobs.map((j) => j.id),
    'all 3 results recorded',
  );
  for (const j of jobs) {
    assert.equal(w.runs.get(j.id), 1, `job ${j.id} ran once`);
    const stored = await queue.getJob(j.id);
    assert.equal(await stored?.getState(), 'completed');
    assert.equal((stored?.returnvalue as string | undefined)?.length, result.length, `job ${j.id}'s result stored`);
  }
});

// ---- a lane's tail bucket rolled by another producer ------------------------

/**
 * Has another producer fill the plain lane past one bucket (so it rolls to the
 * next) and the worker run all of it, so that the first bucket ends empty and
 * not the tail, which the head scan may remove.
 */
async function rollFirstBucket(queue: Queue, w: ReturnType<typeof watchedWorker>): Promise<void> {
  const filler: BulkJob[] = Array.from({ length: BUCKET_CAPACITY + 50 }, (_, i) => ({
    name: 'filler',
    data: i,
    opts: { removeOnComplete: true },
  }));
  const jobs = await queue.addBulk(filler);
  await allCompleted(
    w,
    jobs.map((j) => j.id),
    'the filler jobs completed',
  );
  await waitFor(async () => (await queue.getJobCounts('active', 'waiting')).active === 0, {
    what: 'the last outcomes written',
  });
}

test('a delayed job is promoted after another producer rolled the lane and its first bucket emptied', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stale-tail-promote', env);
  t.after(() => queue.close());
  const w = watchedWorker(t, env, 'stale-tail-promote', async () => 'ok', { concurrency: 50 });
  // The leader promotes one delayed job first: it now knows the lane's tail bucket.
  const primer = await queue.add('primer', {}, { delay: 200 });
  await allCompleted(w, [primer.id], 'the first delayed job completed');
  await rollFirstBucket(queue, w);
  const late = await queue.add('late', {}, { delay: 300 });
  await allCompleted(w, [late.id], 'the delayed job added after the roll completed');
  assert.equal(w.runs.get(late.id), 1);
  assert.equal(await (await queue.getJob(late.id))?.getState(), 'completed');
});

test('an immediate retry after another producer rolled the lane and its first bucket emptied is not lost', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stale-tail-retry', env);
  t.after(() => queue.close());
  const w = watchedWorker(
    t,
    env,
    'stale-tail-retry',
    async (job) => {
      if (job.name === 'flaky' && job.attemptsMade === 0) throw new Error('first attempt fails');
      return 'ok';
    },
    { concurrency: 50, lockDuration: 4000, stalledInterval: 500 },
  );
  // One immediate retry first: the worker now knows the lane's tail bucket.
  const primer = await queue.add('flaky', { primer: true }, { attempts: 2 });
  await allCompleted(w, [primer.id], 'the first retried job completed');
  await rollFirstBucket(queue, w);
  const flaky = await queue.add('flaky', {}, { attempts: 2 });
  await allCompleted(w, [flaky.id], 'the job retried after the roll completed');
  assert.equal(w.runs.get(flaky.id), 2, 'one failed attempt, one retry');
  const stored = await queue.getJob(flaky.id);
  assert.equal(await stored?.getState(), 'completed');
  assert.equal(stored?.attemptsMade, 2);
  assert.equal(stored?.stalledCounter, 0);
});
