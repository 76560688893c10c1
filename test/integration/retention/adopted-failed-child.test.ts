/**
 * A failed job is remembered by the worker that failed it as plain (no
 * parent) for its later trim. A flow naming that job's id afterwards
 * (BullMQ's duplicated id) makes it a pending child of its parent. When the
 * worker's next failure trims it, the trim must detach it from that parent,
 * as a fresh read of its record would, and as removing it by hand does:
 * otherwise the parent waits for a deleted child for ever.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

/** Queues `kids` and `parents`, a FlowProducer, and a Worker on `kids` whose every job fails (counted). */
async function failingKids(t: TestContext) {
  const { connection } = await bullEnv(t);
  const kids = new Queue('kids', { connection });
  const parents = new Queue('parents', { connection });
  const flow = new FlowProducer({ connection });
  t.after(() => Promise.all([kids.close(), parents.close(), flow.close()]));
  const seen = { failed: 0 };
  const worker = new Worker(
    'kids',
    async () => {
      throw new Error('broken');
    },
    { connection },
  );
  worker.on('failed', () => {
    seen.failed++;
  });
  t.after(() => worker.close());
  return { kids, parents, flow, seen };
}

test('removeOnFail count: a failed job adopted by a flow since its finish is detached when trimmed', {}, async (t) => {
  const { kids, parents, flow, seen } = await failingKids(t);
  const keep = { removeOnFail: { count: 1 } };
  await kids.add('k', 1, { jobId: 'x', ...keep });
  await waitFor(() => seen.failed === 1, { what: 'x to fail' });

  const tree = await flow.add({
    name: 'p',
    queueName: 'parents',
    children: [{ name: 'k', queueName: 'kids', opts: { jobId: 'x', ...keep } }],
  });
  const parentId = tree.job.id as string;
  assert.equal(await tree.job.getState(), 'waiting-children');

  await kids.add('k', 2, { jobId: 'y', ...keep });
  await waitFor(() => seen.failed === 2, { what: 'y to fail' });
  await waitFor(async () => (await kids.getJob('x')) === undefined, { what: 'x to be trimmed' });
  // its only child gone, the parent no longer waits for children (as after kids.remove('x'))
  await waitFor(async () => (await parents.getJobState(parentId)) !== 'waiting-children', {
    what: 'the parent to leave waiting-children',
    timeoutMs: 5000,
  });
});

test('control: removing that adopted child by hand releases its parent', {}, async (t) => {
  const { kids, parents, flow, seen } = await failingKids(t);
  await kids.add('k', 1, { jobId: 'x' });
  await waitFor(() => seen.failed === 1, { what: 'x to fail' });
  const tree = await flow.add({
    name: 'p',
    queueName: 'parents',
    children: [{ name: 'k', queueName: 'kids', opts: { jobId: 'x' } }],
  });
  const parentId = tree.job.id as string;
  assert.equal(await tree.job.getState(), 'waiting-children');
  await kids.remove('x');
  await waitFor(async () => (await parents.getJobState(parentId)) !== 'waiting-children', {
    what: 'the parent to leave waiting-children',
    timeoutMs: 5000,
  });
});
