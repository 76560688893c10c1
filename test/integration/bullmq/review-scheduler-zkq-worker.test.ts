/**
 * One store, two front-ends, for job schedulers: a scheduler a BullMQ Queue
 * made keeps ticking when zkq's own Worker runs its iterations.
 */
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

test("a BullMQ scheduler's iterations run by zkq's Worker: the scheduler goes on past the first", {
  todo: "zkq's Worker never advances a scheduler: the first iteration it runs is the last (it would need BullMQ's next-time rules, cron patterns included)",
}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('mixed', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('mixed', { every: 300 }, { name: 'tick' });
  const ran: string[] = [];
  const worker = new ZkqWorker('mixed', async (job) => void ran.push(job.id), { ...env, drainDelay: 1 });
  t.after(() => worker.close());
  await waitFor(() => ran.length >= 3, { timeoutMs: 15_000, what: 'three iterations' });
});
