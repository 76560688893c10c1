/**
 * BullMQ's own Queue and Worker on the ZooKeeper backend: jobs run, retry
 * with backoff, fail, and the two front-ends share one store.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue as ZkqQueue } from '@zkq/producer';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('a BullMQ Worker runs jobs a BullMQ Queue added: results, retries with backoff, failures', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('bq', { connection });
  t.after(() => queue.close());
  const tries = new Map<string, number>();
  const worker = new Worker(
    'bq',
    async (job) => {
      const n = (tries.get(job.id as string) ?? 0) + 1;
      tries.set(job.id as string, n);
      if (job.data.fail === 'always') throw new Error('always fails');
      if (job.data.fail === 'once' && n === 1) throw new Error('first try fails');
      return { doubled: job.data.n * 2 };
    },
    { connection, concurrency: 4 },
  );
  t.after(() => worker.close());
  const a = await queue.add('plain', { n: 21 });
  const b = await queue.add('flaky', { n: 1, fail: 'once' }, { attempts: 2, backoff: 100 });
  const c = await queue.add('bad', { n: 2, fail: 'always' }, { attempts: 2 });
  await waitFor(async () => (await c.getState()) === 'failed' && (await b.getState()) === 'completed', {
    timeoutMs: 20_000,
  });
  const doneA = await queue.getJob(a.id as string);
  assert.deepEqual(doneA?.returnvalue, { doubled: 42 });
  const doneB = await queue.getJob(b.id as string);
  assert.equal(doneB?.attemptsMade, 2);
  const doneC = await queue.getJob(c.id as string);
  assert.equal(doneC?.failedReason, 'always fails');
  assert.equal(doneC?.attemptsMade, 2);
});

test('one store, two front-ends: zkq runs what BullMQ added, BullMQ runs what zkq added', async (t) => {
  const { env, connection } = await bullEnv(t);
  const bullQueue = new Queue('shared', { connection });
  const zkqQueue = new ZkqQueue('shared', env);
  t.after(() => Promise.all([bullQueue.close(), zkqQueue.close()]));

  const fromBull = await bullQueue.add('from-bullmq', { v: 1 });
  const zkqWorker = new ZkqWorker('shared', async (job) => `zkq saw ${job.data.v}`, { ...env });
  await waitFor(async () => (await zkqQueue.getJob(fromBull.id as string))?.returnvalue === 'zkq saw 1', {
    timeoutMs: 15_000,
  });
  await zkqWorker.close();

  const fromZkq = await zkqQueue.add('from-zkq', { v: 2 });
  const bullWorker = new Worker('shared', async (job) => `bullmq saw ${job.data.v}`, { connection });
  t.after(() => bullWorker.close());
  await waitFor(async () => (await bullQueue.getJob(fromZkq.id))?.returnvalue === 'bullmq saw 2', {
    timeoutMs: 15_000,
  });
});

test("a BullMQ Worker's metrics option: finished jobs counted per minute, read with getMetrics", async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('metered', { connection });
  t.after(() => queue.close());
  let settled = 0;
  const worker = new Worker(
    'metered',
    async (job) => {
      if (job.data.fail) throw new Error('no');
    },
    { connection, metrics: { maxDataPoints: 10 } },
  );
  worker.on('completed', () => settled++);
  worker.on('failed', () => settled++);
  await queue.addBulk([0, 1, 2, 3, 4].map((i) => ({ name: 'm', data: { fail: i >= 3 } })));
  await waitFor(async () => settled === 5, { timeoutMs: 15_000, what: 'five jobs finished' });
  await worker.close(); // writes what it counted
  assert.equal((await queue.getMetrics('completed')).meta.count, 3);
  assert.equal((await queue.getMetrics('failed')).meta.count, 2);
});
