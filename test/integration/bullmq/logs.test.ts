/**
 * BullMQ's own Worker on the ZooKeeper backend: its `job.log` lines are
 * written at once to the job's log node; a job removed as it finishes
 * (removeOnComplete / removeOnFail `true`) takes that node with it, and a
 * job kept keeps its lines.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { QueueLayout } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';
import { prefixSession } from '../../helpers/znodes.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('BullMQ Worker: a job that logged and is removed as it finishes takes its log node with it; one kept keeps its lines', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('bull-logs', { connection });
  t.after(() => queue.close());
  const worker = new Worker(
    'bull-logs',
    async (job) => {
      await job.log(`line of ${job.data.n}`);
      if (job.data.fail) throw new Error('no');
      return job.data.n;
    },
    { connection },
  );
  t.after(() => worker.close());
  const gone = await queue.add('g', { n: 1 }, { removeOnComplete: true });
  const failedGone = await queue.add('f', { n: 2, fail: true }, { removeOnFail: true });
  const kept = await queue.add('k', { n: 3 });
  await waitFor(async () => (await queue.getJobState(kept.id as string)) === 'completed', { what: 'the kept job' });
  await waitFor(async () => (await queue.getJob(gone.id as string)) === undefined, { what: 'the removed one gone' });
  await waitFor(async () => (await queue.getJob(failedGone.id as string)) === undefined, {
    what: 'the failed one gone',
  });
  const session = await prefixSession(t, env);
  const layout = new QueueLayout('bull-logs');
  // no sweep ran (the leader sweeps once a minute): the finishes deleted them
  await waitFor(async () => (await session.exists(layout.logs(gone.id as string))) === null, {
    what: "the removed job's log node gone",
  });
  await waitFor(async () => (await session.exists(layout.logs(failedGone.id as string))) === null, {
    what: "the failed and removed job's log node gone",
  });
  assert.deepEqual((await queue.getJobLogs(kept.id as string)).logs, ['line of 3']);
});
