/**
 * Pipelined adds keep their call order, whether or not they name their id:
 * an add with a custom id needs no id from the queue's counter, but it must
 * not overtake plain adds called before it that wait for one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

test('a plain add then an add with a custom id, pipelined: they wait in call order', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('custom-order', env);
  t.after(() => queue.close());
  await queue.waitUntilReady();
  await Promise.all([queue.add('j', { n: 0 }), queue.add('j', { n: 1 }, { jobId: 'named' })]);
  const order = (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(order, [0, 1]);
});

test('pipelined adds of every kind are stored in call order', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('mixed-order', env);
  t.after(() => queue.close());
  await queue.waitUntilReady();
  const adds = [];
  for (let n = 0; n < 60; n++) {
    if (n % 3 === 1) adds.push(queue.add('j', { n }, { jobId: `named-${n}` }));
    else if (n % 5 === 0) adds.push(queue.addBulk([{ name: 'j', data: { n } }]));
    else adds.push(queue.add('j', { n }));
  }
  await Promise.all(adds);
  const order = (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(
    order,
    Array.from({ length: 60 }, (_, n) => n),
  );
});

test('an add that fails before it is sent does not hold up the adds called after it', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('failed-turn', env);
  t.after(() => queue.close());
  await queue.waitUntilReady();
  const bad = queue.add('j', { n: 0 }, { delay: -5 });
  const good = queue.add('j', { n: 1 }, { jobId: 'fine' });
  await assert.rejects(bad, { code: 'ZKQ_INVALID_ARGUMENT' });
  assert.equal((await good).id, 'fine');
});
