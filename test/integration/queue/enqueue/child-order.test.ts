/**
 * Pipelined adds with `opts.parent` keep their call order too: a child is
 * added on its own (its transaction counts it into its parent), after the
 * jobs of earlier calls, and before those of later ones.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

/** A queue of kids, and a parent in another queue (delayed: it never runs). */
async function kidsAndParent(t: TestContext) {
  const env = await queueEnv(t);
  const parents = new Queue('parents', env);
  const queue = new Queue('kids', env);
  t.after(() => Promise.all([parents.close(), queue.close()]));
  return { queue, parent: await parents.add('p', {}, { delay: 600_000 }) };
}

const order = async (queue: Queue) => (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n);

test('an addBulk with a child, then a plain add, pipelined: the child is stored before the later add', async (t) => {
  const { queue, parent } = await kidsAndParent(t);
  await queue.waitUntilReady();
  const bulk = queue.addBulk([
    { name: 'j', data: { n: 0 } },
    { name: 'j', data: { n: 1 }, opts: { parent: { id: parent.id, queue: 'parents' } } },
  ]);
  const later = queue.add('j', { n: 2 });
  await Promise.all([bulk, later]);
  assert.deepEqual(await order(queue), [0, 1, 2]);
});

test('a plain add waiting for its id, then a child with a custom id, pipelined: the child waits its turn', async (t) => {
  const { queue, parent } = await kidsAndParent(t);
  await queue.add('j', { n: -1 }); // the id counter exists, its block used up
  const session = await queue.waitUntilReady();
  // The id counter's write (the plain add's ids) is answered once the child's transaction went
  // out, or after a bound when it does not go out while the plain add waits (the order kept).
  let childSent!: () => void;
  const sent = new Promise<void>((resolve) => {
    childSent = resolve;
  });
  const multi = session.multi.bind(session);
  session.multi = (ops) => {
    if (ops.some((op) => op.op === 'create' && op.path.endsWith('/kid'))) childSent();
    return multi(ops);
  };
  const setData = session.setData.bind(session);
  session.setData = async (path, data, version) => {
    if (path.endsWith('/ids')) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([sent, new Promise((resolve) => (timer = setTimeout(resolve, 1500)))]);
      clearTimeout(timer);
    }
    return setData(path, data, version);
  };
  const plain = queue.add('j', { n: 0 });
  const child = queue.add('j', { n: 1 }, { jobId: 'kid', parent: { id: parent.id, queue: 'parents' } });
  await Promise.all([plain, child]);
  assert.deepEqual(await order(queue), [-1, 0, 1]);
});
