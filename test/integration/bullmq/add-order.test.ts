/**
 * BullMQ's Queue on the ZooKeeper backend: pipelined adds are stored in
 * call order, as on Redis (one connection, commands in order), whatever
 * each waits for on the way (an id from the counter, ZooKeeper's clock, a
 * deduplication key to read and take over); an add with a custom id needs
 * none of these, and must not overtake earlier ones.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

test('BullMQ on ZooKeeper: a plain add then an add with a custom id, pipelined: they wait in call order', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('bull-order', { connection });
  t.after(() => queue.close());
  await queue.waitUntilReady();
  await Promise.all([queue.add('j', { n: 0 }), queue.add('j', { n: 1 }, { jobId: 'named' })]);
  const order = (await queue.getWaiting()).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(order, [0, 1]);
});

test('BullMQ on ZooKeeper: pipelined adds and addBulks of every kind are stored in call order', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('bull-mixed', { connection });
  t.after(() => queue.close());
  await queue.waitUntilReady();
  const adds: Promise<unknown>[] = [];
  for (let n = 0; n < 60; n++) {
    if (n % 3 === 1) adds.push(queue.add('j', { n }, { jobId: `named-${n}` }));
    else if (n % 5 === 0) adds.push(queue.addBulk([{ name: 'j', data: { n } }]));
    else if (n % 7 === 0) adds.push(queue.add('j', { n }, { deduplication: { id: `key-${n}` } }));
    else adds.push(queue.add('j', { n }));
  }
  await Promise.all(adds);
  const order = (await queue.getWaiting()).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(
    order,
    Array.from({ length: 60 }, (_, n) => n),
  );
});

test('BullMQ on ZooKeeper: an add taking over a run-out deduplication key, then a plain add, pipelined: call order', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('bull-dedup-order', { connection });
  t.after(() => queue.close());
  await queue.add('j', { n: 0 }, { deduplication: { id: 'throttle', ttl: 1 } });
  await waitFor(async () => (await queue.getDeduplicationJobId('throttle')) === null, {
    timeoutMs: 5000,
    what: 'the throttle key to run out',
  });
  const [taking] = await Promise.all([
    queue.add('j', { n: 1 }, { deduplication: { id: 'throttle', ttl: 60_000 } }),
    queue.add('j', { n: 2 }),
  ]);
  assert.equal(await queue.getDeduplicationJobId('throttle'), taking.id);
  const order = (await queue.getWaiting()).map((j) => (j.data as { n: number }).n);
  assert.deepEqual(order, [0, 1, 2]);
});
