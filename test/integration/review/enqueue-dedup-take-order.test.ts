/**
 * Pipelined adds keep their call order when one takes over a deduplication
 * key that is no longer live (a throttle key whose ttl ran out: the node
 * stays until the next add with that id replaces it). That add's first
 * transaction fails on the key's create; its job is written in a later one,
 * after reading the key, while an add called after it has joined the group
 * commit and is stored first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('an add taking over a stale deduplication key, then a plain add, pipelined: they wait in call order', {
  todo: 'the add that takes the stale key writes its job after its first transaction failed; the plain add called after it is stored first',
}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('dedup-take-order', env);
  t.after(() => queue.close());
  await queue.add('j', { n: 0 }, { deduplication: { id: 'throttle', ttl: 1 } });
  await waitFor(async () => (await queue.getDeduplicationJobId('throttle')) === null, {
    timeoutMs: 5000,
    what: 'the throttle key to run out',
  });
  const taking = queue.add('j', { n: 1 }, { deduplication: { id: 'throttle', ttl: 60_000 } });
  const plain = queue.add('j', { n: 2 });
  assert.equal((await taking).id !== (await plain).id, true);
  assert.equal(await queue.getDeduplicationJobId('throttle'), (await taking).id, 'the add took the key over');
  const order = (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(order, [0, 1, 2]);
});
