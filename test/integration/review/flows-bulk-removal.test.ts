/**
 * Bulk removals of children: drain, clean and obliterate delete a child
 * without taking it out of its parent's dependencies, so a parent whose
 * children are all gone waits in waiting-children for ever (Queue.remove of
 * the same children releases it). BullMQ's drain, clean and obliterate
 * release a parent in another queue when its last child goes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FlowProducer, Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';

const TODO =
  "KNOWN DEFECT, not fixed yet: zkq's drain, clean and obliterate delete children without taking them out of their parent's dependencies, so the parent waits for ever (BullMQ's front-end detaches in drain and clean)";

async function flowOfTwo(t: { name?: string; after: (fn: () => unknown) => void }) {
  const env = await queueEnv(t);
  const flows = new FlowProducer(env);
  const parents = new Queue('parents', env);
  const kids = new Queue('kids', env);
  t.after(() => Promise.all([flows.close(), parents.close(), kids.close()]));
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

test('drain(true) of the children queue releases the parent whose children it removed', { todo: TODO }, async (t) => {
  const { tree, kids } = await flowOfTwo(t);
  await kids.drain(true);
  assert.equal(await kids.count(), 0, 'both children were removed');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  assert.equal(await tree.job.getState(), 'waiting', 'no child is left: the parent goes on');
});

test('clean of waiting and delayed children releases the parent whose children it removed', {
  todo: TODO,
}, async (t) => {
  const { tree, kids } = await flowOfTwo(t);
  const removed = [...(await kids.clean(0, 0, 'wait')), ...(await kids.clean(0, 0, 'delayed'))];
  assert.equal(removed.length, 2, 'both children were removed');
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 0);
  assert.equal(await tree.job.getState(), 'waiting', 'no child is left: the parent goes on');
});

test('obliterate of the children queue releases the parent in another queue', { todo: TODO }, async (t) => {
  const { tree, kids } = await flowOfTwo(t);
  await kids.obliterate();
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 0, 'no dependency names a job that is gone');
  assert.equal(await tree.job.getState(), 'waiting', 'no child is left: the parent goes on');
});
