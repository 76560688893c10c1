/**
 * Pipelined adds past one shared run's size: the group commit starts a
 * second run beside the first, and its multis must not be sent between
 * the first run's (a run sends its multis one after the other, building
 * each first), or later calls' jobs are stored ahead of earlier ones.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

test('a bulk that fills a shared run, then an add: the add is stored last', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('runs-sent', env);
  t.after(() => queue.close());
  await queue.waitUntilReady();
  const bulk = queue.addBulk(Array.from({ length: 5000 }, (_, n) => ({ name: 'j', data: { n } })));
  const single = queue.add('j', { n: 5000 });
  await Promise.all([bulk, single]);
  const order = (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n);
  assert.equal(order.length, 5001);
  assert.equal(order.indexOf(5000), 5000, `the add is stored at ${order.indexOf(5000)} of 5001`);
});
