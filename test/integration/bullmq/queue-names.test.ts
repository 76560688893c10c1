/**
 * Queue names BullMQ accepts (quotes, a backslash, a slash, a newline,
 * non-ASCII letters; anything but ':') on the ZooKeeper backend: the queue
 * lives under its percent-encoded node name, zkq's own Queue and the CLI's
 * listing find it by its name, and a flow's dependency entries naming such
 * a queue are read back. Names of earlier versions keep their nodes; ':' is
 * refused at the entry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { InvalidArgumentError } from '@zkq/core';
import { decodeQueueName, encodeQueueName, openSession } from '@zkq/core/internal';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { queueNamesIn } from '../../../packages/cli/src/reader.ts';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

const SPECIAL = 'queue"name\\with\nspecials/é';

test('a queue name with quotes, a backslash, a newline and a slash holds jobs under its encoded node', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue(SPECIAL, { connection });
  const zkq = new ZkqQueue(SPECIAL, env);
  t.after(() => Promise.all([queue.close(), zkq.close()]));
  const job = await queue.add('j', { v: 1 });
  assert.equal(await zkq.getJobCountByTypes('waiting'), 1);
  const ran: unknown[] = [];
  const worker = new Worker(SPECIAL, async (j) => void ran.push(j.data), { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job to run' });
  assert.deepEqual(ran, [{ v: 1 }]);
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const nodes = await session.getChildren('/');
  assert.ok(nodes.includes('queue%22name%5Cwith%0Aspecials%2F%C3%A9'), nodes.join(', '));
  assert.deepEqual(await queueNamesIn(session), [SPECIAL]);
});

test("a flow's child in such a queue is read back from its parent's dependencies", async (t) => {
  const { connection } = await bullEnv(t);
  const flows = new FlowProducer({ connection });
  t.after(() => flows.close());
  const tree = await flows.add({
    name: 'parent',
    queueName: 'plain',
    children: [{ name: 'kid', queueName: SPECIAL, data: {} }],
  });
  const kid = new Worker(SPECIAL, async () => 'from kid', { connection });
  const parent = new Worker('plain', async (j) => j.getChildrenValues(), { connection });
  t.after(() => Promise.all([kid.close(), parent.close()]));
  await waitFor(async () => (await tree.job.getState()) === 'completed', { what: 'the parent to run' });
  const plain = new Queue('plain', { connection });
  t.after(() => plain.close());
  const values = (await plain.getJob(tree.job.id as string))?.returnvalue;
  const child = tree.children?.[0]?.job;
  assert.ok(child);
  assert.deepEqual(values, { [`${connection.namespace}:${SPECIAL}:${child.id}`]: 'from kid' });
});

test('names of the safe set keep their nodes; encoding and decoding are inverse; ":" is refused', async (t) => {
  for (const name of ['emails', 'a.b_c-D9']) assert.equal(encodeQueueName(name), name);
  for (const name of [SPECIAL, '%', 'tab\there', 'ünïcödé', '😀']) {
    assert.equal(decodeQueueName(encodeQueueName(name)), name);
  }
  assert.equal(decodeQueueName('not%2'), undefined);
  assert.equal(decodeQueueName('lower%c3%a9'), undefined, 'one spelling per name');
  const { connection } = await bullEnv(t);
  assert.throws(() => new ZkqQueue('a:b', { connection }), InvalidArgumentError);
});
