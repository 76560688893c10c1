/**
 * A child with failParentOnFailure fails: its parent is released with a
 * deferred failure and fails at its next claim without running. The record
 * keeps that deferred failure after it has failed, and a retry keeps it
 * too: the retried parent fails again at once, without running, every time.
 * Retrying the child (which then completes) and then the parent cannot
 * bring the flow back. BullMQ drops the deferred failure (`defa`) when the
 * job fails, so a retried parent runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

test('a parent failed by its child runs when retried after the child was fixed', async (t) => {
  const {
    env,
    flows,
    queues: { q: queue },
  } = await flowEnv(t, 'q');
  const tree = await flows.add({
    name: 'parent',
    queueName: 'q',
    children: [{ name: 'child', queueName: 'q', opts: { failParentOnFailure: true } }],
  });
  let broken = true;
  let parentRuns = 0;
  const worker = new Worker(
    'q',
    async (job) => {
      if (job.name === 'child') {
        if (broken) throw new Error('child broke');
        return 'fixed';
      }
      parentRuns++;
      return 'parent ran';
    },
    env,
  );
  t.after(() => worker.close());
  const parent = tree.job;
  const child = tree.children?.[0]?.job as typeof parent;
  await waitFor(async () => (await parent.getState()) === 'failed', { what: 'the parent to fail' });
  assert.equal(parentRuns, 0, 'the parent failed without running, as it should');

  broken = false;
  await child.retry();
  await waitFor(async () => (await child.getState()) === 'completed', { what: 'the retried child' });
  await parent.retry();
  await waitFor(async () => ['completed', 'failed'].includes(await parent.getState()), { what: 'the retried parent' });
  const after = await queue.getJob(parent.id);
  assert.equal(parentRuns, 1, `the retried parent did not run: ${after?.failedReason}`);
  assert.equal(after?.returnvalue, 'parent ran');
});
