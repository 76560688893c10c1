/**
 * Pipelined adds keep their call order, whether or not they name their id:
 * an add with a custom id needs no id from the queue's counter, but it must
 * not overtake plain adds called before it that wait for one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';

test('a plain add then an add with a custom id, pipelined: they wait in call order', {
  todo: 'the custom-id add is stored first: it needs no id from the counter, the plain add called before it waits for one',
}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('custom-order', env);
  t.after(() => queue.close());
  await queue.waitUntilReady();
  await Promise.all([queue.add('j', { n: 0 }), queue.add('j', { n: 1 }, { jobId: 'named' })]);
  const order = (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(order, [0, 1]);
});
