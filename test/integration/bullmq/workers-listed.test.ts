/**
 * BullMQ lists a Worker from its creation (its named connection), before it
 * runs: a Worker made with `autorun: false` is in `getWorkers()` once ready,
 * while its housekeeping (its election) waits for its run, and leaves it
 * once closed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('a Worker that does not run yet is listed by getWorkers once ready, and not once closed', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('listed', { connection });
  t.after(() => queue.close());
  const worker = new Worker('listed', async () => {}, { autorun: false, connection });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  assert.equal((await queue.getWorkers()).length, 1);
  await worker.close();
  await waitFor(async () => (await queue.getWorkers()).length === 0, { what: 'the closed Worker unlisted' });
});
