/**
 * Flows and retention on the ZooKeeper backend: a child removed as it fails
 * no longer holds its parent back; a parent removed as it completes, or
 * trimmed later, takes its dependencies along, and its id can be used again.
 * A job removed as it finishes goes in its finish's own transaction, as on
 * Redis: no `removed` event follows its `completed` or `failed`.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer, QueueEvents } = withBackend(createZooKeeperBackend);

/** The ids of the jobs whose `removed` event a QueueEvents of `q` saw, and a wait for a job's `completed`. */
async function watchRemovals(t: TestContext, connection: Awaited<ReturnType<typeof bullEnv>>['connection']) {
  const events = new QueueEvents('q', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const removed: string[] = [];
  const completed = new Set<string>();
  events.on('removed', ({ jobId }) => removed.push(jobId));
  events.on('completed', ({ jobId }) => completed.add(jobId));
  return { removed, completedSeen: (id: string) => waitFor(() => completed.has(id)) };
}

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

test('a parent and a failed child removed as they finish leave no removed event: each goes in its finish', async (t) => {
  const { connection, flow, queue } = await bullFlowEnv(t);
  const { removed, completedSeen } = await watchRemovals(t, connection);
  const tree = await flow.add({
    name: 'parent',
    queueName: 'q',
    opts: { jobId: 'p', removeOnComplete: true },
    children: [
      { name: 'ok', queueName: 'q', opts: { jobId: 'ok' } },
      { name: 'bad', queueName: 'q', opts: { jobId: 'bad', removeOnFail: true } },
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
  await waitFor(async () => (await tree.job.getState()) === 'unknown');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  // events come in order: once a later job's completion is seen, any removal before it was too
  await queue.add('marker', {}, { jobId: 'marker' });
  await completedSeen('marker');
  assert.deepEqual(removed, []);
});

test('a job given a child while it ran, removed as it completes, takes its dependencies along', async (t) => {
  const { connection, queue } = await bullFlowEnv(t);
  const { removed, completedSeen } = await watchRemovals(t, connection);
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name !== 'host') return 'kid done';
      const kid = await queue.add(
        'kid',
        {},
        { jobId: 'kid', parent: { id: job.id as string, queue: job.queueQualifiedName } },
      );
      await waitFor(async () => (await kid.getState()) === 'completed');
      return 'host done';
    },
    { connection, concurrency: 2 },
  );
  t.after(() => worker.close());
  const host = await queue.add('host', {}, { jobId: 'host', removeOnComplete: true });
  await completedSeen('host');
  assert.equal(await host.getState(), 'unknown');
  assert.deepEqual(await host.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  assert.deepEqual(removed, []);
});

test('a job given a child while it ran, removed as it fails, takes its dependencies along', async (t) => {
  const { connection, queue } = await bullFlowEnv(t);
  const { removed, completedSeen } = await watchRemovals(t, connection);
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name !== 'host') return 'kid done';
      const kid = await queue.add(
        'kid',
        {},
        { jobId: 'kid', parent: { id: job.id as string, queue: job.queueQualifiedName } },
      );
      await waitFor(async () => (await kid.getState()) === 'completed');
      throw new Error('host broke');
    },
    { connection, concurrency: 2 },
  );
  t.after(() => worker.close());
  const host = await queue.add('host', {}, { jobId: 'host', removeOnFail: true });
  await waitFor(async () => (await host.getState()) === 'unknown');
  assert.deepEqual(await host.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  await queue.add('marker', {}, { jobId: 'marker' });
  await completedSeen('marker');
  assert.deepEqual(removed, []);
  // its id can be used again, as a plain job
  const again = await queue.add('again', {}, { jobId: 'host' });
  await waitFor(async () => (await again.getState()) === 'completed');
  assert.deepEqual(await again.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
});

test('a child in another queue removed as it fails releases its parent there', async (t) => {
  const { connection, flow } = await bullFlowEnv(t);
  const tree = await flow.add({
    name: 'parent',
    queueName: 'parents',
    opts: { jobId: 'p' },
    children: [
      { name: 'ok', queueName: 'q', opts: { jobId: 'ok' } },
      { name: 'bad', queueName: 'q', opts: { jobId: 'bad', removeOnFail: true } },
    ],
  });
  const kids = new Worker(
    'q',
    async (job: Job) => {
      if (job.name === 'bad') throw new Error('broke');
      return job.name;
    },
    { connection },
  );
  const parents = new Worker('parents', async (job: Job) => Object.keys(await job.getChildrenValues()).length, {
    connection,
  });
  t.after(() => Promise.all([kids.close(), parents.close()]));
  await waitFor(async () => (await tree.job.getState()) === 'completed');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 1, unprocessed: 0, ignored: 0, failed: 0 });
  const bad = tree.children?.find((c) => c.job.name === 'bad')?.job as Job;
  assert.equal(await bad.getState(), 'unknown');
});
