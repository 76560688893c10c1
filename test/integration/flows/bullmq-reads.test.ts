/**
 * Reading a flow on the ZooKeeper backend as BullMQ shows it: the children's
 * values parsed, pages of a parent's dependencies with the children's jobs,
 * and the parent key named as the caller gave it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('getDependencies gives the processed values parsed, whole and by page', async (t) => {
  const { connection, flow, queue } = await bullFlowEnv(t);
  const tree = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [
      { name: 'a', queueName: 'q', data: { v: { x: 1 } } },
      { name: 'b', queueName: 'q', data: { v: 'text' } },
    ],
  });
  const worker = new Worker('q', async (job: Job) => (job.name === 'parent' ? 'done' : job.data.v), { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await tree.job.getState()) === 'completed', { timeoutMs: 20_000 });
  const parent = (await queue.getJob(tree.job.id as string)) as Job;
  const whole = await parent.getDependencies();
  assert.deepEqual(Object.values(whole.processed ?? {}).sort(), [{ x: 1 }, 'text'].sort());
  const paged = await parent.getDependencies({ processed: { count: 10 } });
  assert.deepEqual(Object.values(paged.processed ?? {}).sort(), [{ x: 1 }, 'text'].sort());
  assert.equal(paged.nextProcessedCursor, 0);
});

test("Queue.getDependencies pages a parent's pending and processed children, with their jobs", async (t) => {
  const { connection, flow, queue } = await bullFlowEnv(t);
  const tree = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [0, 1, 2, 3].map((i) => ({ name: `c${i}`, queueName: 'q', data: { i } })),
  });
  const id = tree.job.id as string;
  const all = await queue.getDependencies(id, 'pending', 0, -1);
  assert.equal(all.total, 4);
  assert.equal(all.items.length, 4);
  assert.deepEqual(all.jobs.map((j) => j.name).sort(), ['c0', 'c1', 'c2', 'c3']);
  assert.ok(all.items.every((i) => i.id.endsWith(`:q:${i.id.split(':').pop()}`)));
  const some = await queue.getDependencies(id, 'pending', 1, 2);
  assert.equal(some.items.length, 2);
  assert.equal(some.total, 4);

  const worker = new Worker('q', async (job: Job) => job.data.i ?? 'done', { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await tree.job.getState()) === 'completed', { timeoutMs: 20_000 });
  assert.equal((await queue.getDependencies(id, 'pending', 0, -1)).total, 0);
  const processed = await queue.getDependencies(id, 'processed', 0, -1);
  assert.equal(processed.total, 4);
  assert.deepEqual(processed.items.map((i) => i.v).sort(), [0, 1, 2, 3]);
  assert.equal(processed.jobs.length, 4);
});

test('a missing parent is named by the key the caller gave', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('q', { connection });
  t.after(() => queue.close());
  await assert.rejects(
    queue.add('orphan', {}, { parent: { id: 'gone', queue: 'custom-prefix:q' } }),
    (err: Error) => err.message === 'Missing key for parent job custom-prefix:q:gone. addJob',
  );
});
