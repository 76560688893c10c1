/**
 * Transactions fit ZooKeeper's packet limit whatever the record sizes: the
 * claims of many large jobs at once, and the finishes of large results
 * together. With no fault injected, the worker reports no error, loses no
 * job, and runs each job once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { allCompleted, watchedWorker } from '../../helpers/watched-worker.js';

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
