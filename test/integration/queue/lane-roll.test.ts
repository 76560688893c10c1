/**
 * A lane's tail bucket that another producer rolled and the head scan
 * removed: a delayed job promoted, or a job retried at once, into the lane
 * afterwards is not lost. With no fault injected, the worker reports no
 * error, loses no job, and runs each job once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { type BulkJob, Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { allCompleted, watchedWorker } from '../../helpers/watched-worker.js';
import { waitFor } from '../../helpers/zk.js';

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
