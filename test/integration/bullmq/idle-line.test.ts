/**
 * The idle line under BullMQ's Worker: a Worker that stops asking for jobs
 * (paused by `worker.pause()`) must not hold up the other idle Workers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { testSession, waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('a Worker paused while first in the idle line does not stall the other idle Workers', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const session = await testSession(t, { namespace: `/${env.prefix}` });
  const queue = new Queue('line', { connection });
  t.after(() => queue.close());
  const ran: string[] = [];
  const opts = { connection, concurrency: 2, drainDelay: 1 };
  const first = new Worker('line', async (job) => void ran.push(`first:${job.id}`), opts);
  t.after(() => first.close());
  // the first Worker is idle (in line) before the second joins behind it
  await waitFor(async () => (await session.getChildren('/line/idle').catch(() => [])).length === 1, {
    what: 'the first Worker in the idle line',
  });
  const second = new Worker('line', async (job) => void ran.push(`second:${job.id}`), opts);
  t.after(() => second.close());
  await waitFor(async () => (await session.getChildren('/line/idle')).length === 2, {
    what: 'both Workers in the idle line',
  });

  await first.pause();
  const job = await queue.add('after-pause', { n: 1 });
  // drainDelay is 1 s: the second Worker must pick the job up well within this deadline
  await waitFor(async () => (await queue.getJob(job.id as string))?.finishedOn, {
    timeoutMs: 15_000,
    what: 'the job run by the Worker that is not paused',
  });
  assert.deepEqual(ran, [`second:${job.id}`]);
});
