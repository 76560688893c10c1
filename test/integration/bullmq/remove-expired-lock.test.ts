/**
 * Removing an active job on the ZooKeeper backend: refused while its
 * worker's lease holds, done (claim and global-concurrency slot with it)
 * once the lease ran out by ZooKeeper's clock, as BullMQ removes a job
 * whose lock expired; the queue is no longer maxed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

async function claimOne(t: { name?: string; after: (fn: () => unknown) => void }, lockDuration: number) {
  const { connection } = await bullEnv(t);
  const queue = new Queue('rl', { connection });
  t.after(() => queue.close());
  await queue.setGlobalConcurrency(1);
  const worker = new Worker('rl', null, {
    connection,
    lockDuration,
    lockRenewTime: 60_000,
    skipStalledCheck: true,
    skipLockRenewal: true,
  });
  t.after(() => worker.close());
  await queue.addBulk([
    { name: 'a', data: {} },
    { name: 'b', data: {} },
  ]);
  const job = await worker.getNextJob('my-token');
  assert.ok(job);
  assert.equal(await job.getState(), 'active');
  assert.equal(await queue.isMaxed(), true);
  return { queue, job };
}

test('an active job whose lease ran out is removed with its claim and slot', async (t) => {
  const { queue, job } = await claimOne(t, 20);
  await waitFor(
    async () =>
      job.remove().then(
        () => true,
        () => false,
      ),
    { what: 'the job removed once its lease ran out', timeoutMs: 15_000 },
  );
  assert.equal(await queue.getJobState(job.id as string), 'unknown');
  assert.equal(await queue.isMaxed(), false);
  assert.equal(await queue.getJobCountByTypes('active'), 0);
});

test('an active job whose lease holds is not removed', async (t) => {
  const { queue, job } = await claimOne(t, 60_000);
  await assert.rejects(job.remove(), /locked by another worker/);
  assert.equal(await queue.remove(job.id as string), 0);
  assert.equal(await job.getState(), 'active');
  assert.equal(await queue.isMaxed(), true);
});
