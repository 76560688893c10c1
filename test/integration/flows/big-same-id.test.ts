/**
 * A parent added again under the custom id of one removed with a dependency
 * node too large to go with it (left for the leader's sweep). Guards: the
 * new add deleted that node inside its own transaction, and was refused
 * with PayloadTooLargeError when it passed the transaction budget.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

const KIDS = 'children-of-one-very-large-parent-job';

test('a parent added again under the id of a removed one with 4,000 children: added, its old node gone, it runs after its new child', async (t) => {
  const n = 4_000;
  const {
    env,
    flows,
    queues: { parents },
  } = await flowEnv(t, 'parents', KIDS);
  // long child ids: the old node's paths pass one transaction
  const long = (i: number) => `${i}-`.padEnd(128, 'k');
  const first = await flows.add({
    name: 'parent',
    queueName: 'parents',
    opts: { jobId: 'nightly' },
    children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, opts: { jobId: long(i) } })),
  });
  assert.equal(first.children?.length, n);
  await parents.remove('nightly');
  assert.equal(await parents.getJob('nightly'), undefined);

  const again = await flows.add({
    name: 'parent',
    queueName: 'parents',
    opts: { jobId: 'nightly' },
    children: [{ name: 'kid', queueName: KIDS, opts: { jobId: 'one' } }],
  });
  assert.equal(await again.job.getState(), 'waiting-children');
  assert.deepEqual(await again.job.getDependenciesCount(), { processed: 0, unprocessed: 1, ignored: 0, failed: 0 });
  const kids = new Worker(KIDS, async (job) => job.id, env);
  const worker = new Worker('parents', async (job) => job.getChildrenValues(), env);
  t.after(() => Promise.all([kids.close(), worker.close()]));
  await waitFor(async () => (await parents.getJobState('nightly')) === 'completed', {
    timeoutMs: 120_000,
    what: 'the parent to complete',
  });
  assert.deepEqual((await parents.getJob('nightly'))?.returnvalue, { [`${env.prefix}:${KIDS}:one`]: 'one' });
});
