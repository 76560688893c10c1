/**
 * Flows and retention on the ZooKeeper backend: a child removed as it fails
 * no longer holds its parent back; a parent removed as it completes, or
 * trimmed later, takes its dependencies along, and its id can be used again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

test('a child removed as it fails releases its parent when it was the last one pending', async (t) => {
  const { connection, flow } = await bullFlowEnv(t);
  const tree = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [
      { name: 'ok', queueName: 'q' },
      { name: 'bad', queueName: 'q', opts: { removeOnFail: true } },
    ],
  });
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name === 'bad') throw new Error('broke');
      return job.name;
    },
    { connection },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await tree.job.getState()) === 'completed');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 1, unprocessed: 0, ignored: 0, failed: 0 });
  const bad = tree.children?.find((c) => c.job.name === 'bad')?.job as Job;
  assert.equal(await bad.getState(), 'unknown');
});

test('a parent removed as it completes takes its dependencies along; its id can be used again', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  const worker = new Worker('q', async (job: Job) => job.name, { connection });
  t.after(() => Promise.all([flow.close(), queue.close(), worker.close()]));
  const add = () =>
    flow.add({
      name: 'parent',
      queueName: 'q',
      opts: { jobId: 'p', removeOnComplete: true },
      children: [{ name: 'kid', queueName: 'q' }],
    });
  const first = await add();
  await waitFor(async () => (await first.job.getState()) === 'unknown');
  assert.deepEqual(await first.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  const second = await add();
  await waitFor(async () => (await second.job.getState()) === 'unknown');
});

test('a parent trimmed by retention can be added again under its id', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  const worker = new Worker('q', async (job: Job) => job.name, { connection, removeOnComplete: { count: 1 } });
  t.after(() => Promise.all([flow.close(), queue.close(), worker.close()]));
  const add = (id: string) =>
    flow.add({ name: 'parent', queueName: 'q', opts: { jobId: id }, children: [{ name: 'kid', queueName: 'q' }] });
  const first = await add('p1');
  await waitFor(async () => (await first.job.getState()) === 'completed');
  await add('p2');
  // the later completions trim p1 away (its children too: one completed job is kept)
  await waitFor(async () => (await first.job.getState()) === 'unknown');
  const again = await add('p1');
  await waitFor(async () => (await again.job.getState()) === 'completed');
});
