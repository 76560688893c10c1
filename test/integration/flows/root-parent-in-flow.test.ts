/**
 * A flow root's `opts.parent` names an existing job outside the flow. When
 * it names a job of the flow itself (the root, or one of its descendants by
 * custom id), the store takes the link as one inside the flow: the flow is
 * added with a cycle in it, and parents in the cycle wait for each other
 * for ever. BullMQ refuses such a root (its parent does not exist yet).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

const refusal = (err: Error & { code?: string }) =>
  err.code === 'ZKQ_MISSING_PARENT' || err.code === 'ZKQ_INVALID_ARGUMENT';

test('a root whose opts.parent is its own descendant is refused, not added as a cycle that never ends', async (t) => {
  const {
    env,
    flows,
    queues: { v: queue },
  } = await flowEnv(t, 'v');
  const added = flows.add({
    name: 'root',
    queueName: 'v',
    opts: { jobId: 'root', parent: { id: 'middle', queue: 'v' } },
    children: [
      { name: 'middle', queueName: 'v', opts: { jobId: 'middle' }, children: [{ name: 'leaf', queueName: 'v' }] },
    ],
  });
  const outcome = await added.then(
    () => 'added',
    (err: Error) => err,
  );
  if (outcome === 'added') {
    // what follows from it: the leaf runs, and both parents then wait for each other
    const worker = new Worker('v', async () => 'done', env);
    t.after(() => worker.close());
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, { what: 'the leaf' });
    assert.deepEqual(await queue.getJobCounts('waiting-children'), { 'waiting-children': 2 });
    assert.fail('a flow whose root is a child of its own descendant was added: root and middle wait for ever');
  }
  assert.ok(outcome instanceof Error && refusal(outcome), String(outcome));
  assert.equal(await queue.count(), 0, 'nothing written');
});

test('a root whose opts.parent is itself is refused', async (t) => {
  const {
    flows,
    queues: { v: queue },
  } = await flowEnv(t, 'v');
  await assert.rejects(
    flows.add({ name: 'self', queueName: 'v', opts: { jobId: 'self', parent: { id: 'self', queue: 'v' } } }),
    refusal,
  );
  assert.equal(await queue.getJob('self'), undefined, 'nothing written');
});
