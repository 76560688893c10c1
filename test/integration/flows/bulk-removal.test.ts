/**
 * Bulk removals of children: drain, clean and obliterate take a child out of
 * its parent's dependencies as they delete it, as Queue.remove does, so a
 * parent whose children are all gone goes on (BullMQ's drain, clean and
 * obliterate release a parent in another queue when its last child goes).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flowEnv } from '../../helpers/flows.js';

async function flowOfTwo(t: { name?: string; after: (fn: () => unknown) => void }) {
  const {
    flows,
    queues: { parents, kids },
  } = await flowEnv(t, 'parents', 'kids');
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: [
      { name: 'kid', queueName: 'kids' },
      { name: 'kid', queueName: 'kids', opts: { delay: 600_000 } },
    ],
  });
  assert.equal(await tree.job.getState(), 'waiting-children');
  return { tree, parents, kids };
}

test('drain(true) of the children queue releases the parent whose children it removed', async (t) => {
  const { tree, kids } = await flowOfTwo(t);
  await kids.drain(true);
  assert.equal(await kids.count(), 0, 'both children were removed');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  assert.equal(await tree.job.getState(), 'waiting', 'no child is left: the parent goes on');
});

test('clean of waiting and delayed children releases the parent whose children it removed', async (t) => {
  const { tree, kids } = await flowOfTwo(t);
  const removed = [...(await kids.clean(0, 0, 'wait')), ...(await kids.clean(0, 0, 'delayed'))];
  assert.equal(removed.length, 2, 'both children were removed');
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 0);
  assert.equal(await tree.job.getState(), 'waiting', 'no child is left: the parent goes on');
});

test('obliterate of the children queue releases the parent in another queue', async (t) => {
  const { tree, kids } = await flowOfTwo(t);
  await kids.obliterate();
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 0, 'no dependency names a job that is gone');
  assert.equal(await tree.job.getState(), 'waiting', 'no child is left: the parent goes on');
});
