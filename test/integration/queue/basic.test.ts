import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('a worker runs added jobs and records their results', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('basic', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'sq', data: { n: i } })));
  assert.equal(jobs.length, 20);
  const seen: number[] = [];
  const worker = new Worker(
    'basic',
    async (job) => {
      seen.push(job.data.n);
      return job.data.n * job.data.n;
    },
    { ...env, concurrency: 1 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 20, { what: '20 completed' });
  assert.deepEqual(
    seen,
    Array.from({ length: 20 }, (_, i) => i),
  );
  const done = await queue.getJob(jobs[3]!.id);
  assert.equal(done?.returnvalue, 9);
  assert.equal(await done?.getState(), 'completed');
});

test('several workers competing for the head: every job runs and completes exactly once', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('compete', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 300 }, (_, n) => ({ name: 'c', data: { n } })));
  const runs = new Map<string, number>();
  const completedBy = new Map<string, string>();
  const workers = ['w1', 'w2', 'w3'].map((name) => {
    const worker = new Worker(
      'compete',
      async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        return name;
      },
      { ...env, name, concurrency: 10 },
    );
    worker.on('completed', (job) => completedBy.set(job.id, name));
    t.after(() => worker.close());
    return worker;
  });
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === jobs.length, {
    timeoutMs: 60_000,
    what: 'all completed',
  });
  // A worker emits `completed` once the write is acknowledged, a moment after the store shows it.
  await waitFor(() => completedBy.size === jobs.length, { what: 'every completed event' });
  for (const j of jobs) assert.equal(runs.get(j.id), 1, `job ${j.id} ran once`);
  assert.equal(completedBy.size, jobs.length);
  const shares = workers.map((w) => [...completedBy.values()].filter((n) => n === w.id).length);
  assert.ok(
    shares.every((s) => s > 0),
    `every worker got work: ${shares.join('/')}`,
  );
});
