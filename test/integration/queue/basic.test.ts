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
