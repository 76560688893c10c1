/**
 * One store, two front-ends, for job schedulers: a scheduler a BullMQ Queue
 * made keeps ticking when zkq's own Worker runs its iterations.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test("a BullMQ scheduler's iterations run by zkq's Worker: the scheduler goes on past the first", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('mixed', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('mixed', { every: 300 }, { name: 'tick' });
  const ran: string[] = [];
  const worker = new ZkqWorker('mixed', async (job) => void ran.push(job.id), { ...env, drainDelay: 1 });
  t.after(() => worker.close());
  await waitFor(() => ran.length >= 3, { timeoutMs: 15_000, what: 'three iterations' });
});

test("a cron scheduler run by zkq's Worker and BullMQ's at once: one job per second, each run once", async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('cron', { connection });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('each-second', { pattern: '* * * * * *' }, { name: 'tick' });
  const ran: string[] = [];
  const zkqWorker = new ZkqWorker('cron', async (job) => void ran.push(job.id), { ...env, drainDelay: 1 });
  const bullWorker = new Worker('cron', async (job) => void ran.push(job.id as string), { connection, drainDelay: 1 });
  t.after(() => Promise.all([zkqWorker.close(), bullWorker.close()]));
  await waitFor(() => ran.length >= 4, { timeoutMs: 20_000, what: 'four iterations' });
  assert.equal(new Set(ran).size, ran.length, `each tick ran once: ${ran.join(', ')}`);
  for (const id of ran) assert.equal(Number(id.split(':').pop()) % 1000, 0, `${id} is on a whole second`);
});
