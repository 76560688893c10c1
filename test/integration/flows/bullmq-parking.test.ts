/**
 * A running parent parking itself on the ZooKeeper backend
 * (Job.moveToWaitingChildren): waiting for one named child, and BullMQ's
 * refusals once it no longer runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('moveToWaitingChildren waits for a named child only while it is pending; then lock and state refusals', async (t) => {
  const { connection } = await bullEnv(t);
  const parents = new Queue('parents', { connection });
  const steps = new Queue('steps', { connection });
  const worker = new Worker('parents', null, { connection });
  t.after(() => Promise.all([parents.close(), steps.close(), worker.close()]));
  await parents.add('render', {});
  const parent = (await worker.getNextJob('tok')) as Job;
  const id = parent.id as string;
  const stranger = await steps.add('unrelated', {});
  const child = await steps.add('step', {}, { parent: { id, queue: parents.qualifiedName } });

  const notMine = { id: stranger.id as string, queue: steps.qualifiedName };
  assert.equal(await parent.moveToWaitingChildren('tok', { child: notMine }), false);
  assert.equal(await parent.getState(), 'active');

  const mine = { id: child.id as string, queue: steps.qualifiedName };
  assert.equal(await parent.moveToWaitingChildren('tok', { child: mine }), true);
  assert.equal(await parent.getState(), 'waiting-children');

  await assert.rejects(parent.moveToWaitingChildren('tok'), {
    message: `Missing lock for job ${id}. moveToWaitingChildren`,
  });
  await assert.rejects(parent.moveToWaitingChildren('0'), {
    message: `Job ${id} is not in the active state. moveToWaitingChildren`,
  });
});

test('a job that gave itself a child while running cannot complete before that child', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('q', { connection });
  const kids = new Queue('kids', { connection });
  t.after(() => Promise.all([queue.close(), kids.close()]));
  const worker = new Worker(
    'q',
    async (job: Job) => {
      await kids.add('kid', {}, { parent: { id: job.id as string, queue: job.queueQualifiedName } });
      return 'done too early';
    },
    { connection },
  );
  t.after(() => worker.close());
  const parent = await queue.add('parent', {});
  await waitFor(async () => (await parent.getState()) === 'failed');
  const failed = (await queue.getJob(parent.id as string)) as Job;
  assert.equal(failed.failedReason, `Job ${parent.id} has pending dependencies. moveToFinished`);
  assert.deepEqual(await failed.getDependenciesCount(), { processed: 0, unprocessed: 1, ignored: 0, failed: 0 });
});
