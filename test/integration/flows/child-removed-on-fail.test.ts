/**
 * A child that fails with no failure policy stays pending: its parent waits
 * until the child is retried (and completes) or removed. A failed child
 * deleted as it fails (removeOnFail) or trimmed by retention leaves its
 * parent's dependencies as it goes (the last one releases the parent), as
 * BullMQ does: otherwise the parent would wait for ever on a job that is gone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

async function failingChildren(
  t: { name?: string; after: (fn: () => unknown) => void },
  childOpts: Record<string, unknown>,
  count: number,
) {
  const {
    env,
    flows,
    queues: { kids },
  } = await flowEnv(t, 'parents', 'kids');
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: count }, () => ({ name: 'kid', queueName: 'kids', opts: childOpts })),
  });
  const worker = new Worker(
    'kids',
    async () => {
      throw new Error('broken');
    },
    env,
  );
  t.after(() => worker.close());
  const states = () => Promise.all(tree.children?.map((c) => c.job.getState()) ?? []);
  return { tree, kids, states };
}

test('a plain child deleted as it fails (removeOnFail) does not leave its parent waiting for it', async (t) => {
  const { tree, states } = await failingChildren(t, { removeOnFail: true }, 1);
  await waitFor(async () => (await states()).every((s) => s === 'unknown'), { what: 'the child to fail and go' });
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 0, 'a dependency names a job that is gone');
  assert.notEqual(await tree.job.getState(), 'waiting-children');
});

test('a plain child trimmed by retention does not leave its parent waiting for it', async (t) => {
  // one failed job kept: the first child's record is trimmed once the second failed
  const { tree, kids, states } = await failingChildren(t, { removeOnFail: { count: 1 } }, 2);
  await waitFor(
    async () => {
      const s = await states();
      return s.includes('unknown') && s.includes('failed');
    },
    { what: 'one failed child kept, one trimmed' },
  );
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 1, 'a dependency names a job that is gone');
  // the kept child is removed by hand: nothing is left for the parent to wait for
  const [kept] = await kids.getFailed();
  assert.ok(kept);
  assert.equal(await kids.remove(kept.id), 1);
  assert.notEqual(await tree.job.getState(), 'waiting-children', 'every child is gone, the parent still waits');
});
