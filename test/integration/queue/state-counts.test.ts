/**
 * The per-state count getters of BullMQ's Queue, on zkq's Queue: each counts
 * its own state only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('getWaitingCount, getActiveCount, getDelayedCount, getPrioritizedCount, getCompletedCount, getFailedCount', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('counts', env);
  t.after(() => queue.close());
  await queue.add('ok', 1);
  await queue.add('bad', 2);
  let done = 0;
  const worker = new Worker(
    'counts',
    async (job) => {
      if (job.name === 'bad') throw new Error('bad');
      return 'ok';
    },
    env,
  );
  worker.on('completed', () => done++);
  worker.on('failed', () => done++);
  await waitFor(() => done === 2, { what: 'both to finish' });
  await worker.close();
  let release!: () => void;
  const running = new Promise<void>((r) => {
    release = r;
  });
  let started = false;
  const busy = new Worker(
    'counts',
    async () => {
      started = true;
      await running;
    },
    env,
  );
  t.after(() => {
    release();
    return busy.close();
  });
  await queue.add('runs', 3);
  await waitFor(() => started, { what: 'a job to start' });
  await busy.pause(true); // it runs on, claims nothing more
  await queue.add('waits', 4);
  await queue.add('waits', 5);
  await queue.add('later', 6, { delay: 60_000 });
  await queue.add('urgent', 7, { priority: 2 });
  assert.deepEqual(
    {
      waiting: await queue.getWaitingCount(),
      active: await queue.getActiveCount(),
      delayed: await queue.getDelayedCount(),
      prioritized: await queue.getPrioritizedCount(),
      completed: await queue.getCompletedCount(),
      failed: await queue.getFailedCount(),
    },
    { waiting: 2, active: 1, delayed: 1, prioritized: 1, completed: 1, failed: 1 },
  );
});
