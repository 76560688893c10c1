/**
 * Removing the last pending child releases its parent into the parent's
 * ready lane. The lane's bucket comes from the remover's cache of container
 * tails, which can be stale: workers remove a priority lane once it is
 * empty. The release's pointer create must then be built again into a live
 * bucket (role `into`), as every other pointer create is; a stale bucket
 * must not fail the removal with a raw ZooKeeper error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSession, QueueStore } from '@zkq/core/internal';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

test('removing the last child releases a prioritized parent after its lane was removed', async (t) => {
  const {
    env,
    flows,
    queues: { q: queue },
  } = await flowEnv(t, 'q');
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const lane = new QueueStore(session, 'q').layout.lane('p-0000000005');

  // this Queue writes into priority 5's lane once (and remembers its tail bucket) ...
  const warm = await queue.add('warm', {}, { priority: 5 });
  // ... then a worker runs that job and removes the lane it left empty
  const worker = new Worker('q', async () => 'ok', env);
  await waitFor(async () => (await warm.getState()) === 'completed', { what: 'the first job' });
  await waitFor(async () => (await session.exists(lane)) === null, { what: 'the empty lane to be removed' });
  await worker.close();

  const tree = await flows.add({
    name: 'parent',
    queueName: 'q',
    opts: { priority: 5 },
    children: [{ name: 'kid', queueName: 'q' }],
  });
  const kid = tree.children?.[0]?.job.id as string;
  assert.equal(await queue.remove(kid), 1);
  assert.equal(await tree.job.getState(), 'prioritized', 'the parent was released into its lane');
});
