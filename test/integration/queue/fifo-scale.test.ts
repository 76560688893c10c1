import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('FIFO: one producer, one worker at concurrency 1 — start order is enqueue order across buckets', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('fifo', env);
  t.after(() => queue.close());
  const total = BUCKET_CAPACITY * 2 + 300; // spans three buckets
  const added: string[] = [];
  for (let i = 0; i < total; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, total - i) }, (_, k) => ({ name: 'j', data: { n: i + k } }));
    added.push(...(await queue.addBulk(batch)).map((j) => j.id));
  }
  // a few single adds at the tail too
  for (let k = 0; k < 5; k++) added.push((await queue.add('j', { n: total + k })).id);
  const started: string[] = [];
  const worker = new Worker(
    'fifo',
    async (job) => {
      started.push(job.id);
    },
    { ...env, concurrency: 1, removeOnComplete: { count: 10 } },
  );
  t.after(() => worker.close());
  await waitFor(() => started.length === added.length, { timeoutMs: 120_000, what: 'all jobs started' });
  assert.deepEqual(started, added);
  const session = await queue.client;
  const buckets = await session.getChildren('/fifo/ready/p-0000000000');
  assert.ok(buckets.length <= 2, `drained buckets are removed (left: ${buckets.join(',')})`);
});

test('100,000 pending jobs enqueue and drain completely with every listing bounded', {
  timeout: 300_000,
}, async (t) => {
  const env = await queueEnv(t, 10_000);
  const queue = new Queue('big', env);
  t.after(() => queue.close());
  const total = 100_000;
  const batch = Array.from({ length: 5000 }, (_, i) => ({ name: 'n', data: i, opts: { removeOnComplete: true } }));
  for (let i = 0; i < total; i += batch.length) await queue.addBulk(batch);
  const counts = await queue.getJobCounts('waiting');
  assert.equal(counts.waiting, total);
  let done = 0;
  const worker = new Worker(
    'big',
    async () => {
      done++;
    },
    { ...env, concurrency: 50 },
  );
  t.after(() => worker.close());
  await waitFor(() => done === total, { timeoutMs: 240_000, intervalMs: 200, what: `${total} jobs processed` });
  await waitFor(async () => (await queue.getJobCounts('waiting', 'active')).waiting === 0, { what: 'queue empty' });
  const { maxChildren: producer, maxChildrenPath: producerPath } = (await queue.client).stats;
  const { maxChildren: consumer, maxChildrenPath: consumerPath } = (await worker.client).stats;
  // The flat alternative would list 100,000 names (past the ~61,700 a 1 MB reply holds).
  assert.ok(producer <= BUCKET_CAPACITY + 600, `producer listed ${producer} children of ${producerPath}`);
  assert.ok(consumer <= BUCKET_CAPACITY + 600, `worker listed ${consumer} children of ${consumerPath}`);
  assert.equal(done, total);
});
