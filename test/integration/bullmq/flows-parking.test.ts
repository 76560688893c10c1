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
