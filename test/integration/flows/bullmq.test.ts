/**
 * Flows on the ZooKeeper backend: BullMQ's FlowProducer, parents that wait
 * for their children across queues, the failure policies, and the
 * dependency reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

test('a flow across two queues: the parent waits, then runs with its children values', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const parents = new Queue('renders', { connection });
  const kids = new Queue('steps', { connection });
  t.after(() => Promise.all([flow.close(), parents.close(), kids.close()]));

  const tree = await flow.add({
    name: 'render',
    queueName: 'renders',
    data: { movie: 'm1' },
    children: [
      { name: 'step', queueName: 'steps', data: { n: 1 } },
      { name: 'step', queueName: 'steps', data: { n: 2 } },
      { name: 'step', queueName: 'renders', data: { n: 3 } }, // a child in the parent's own queue
    ],
  });
  const parentId = tree.job.id as string;
  assert.equal(await tree.job.getState(), 'waiting-children');
  assert.deepEqual(await parents.getJobCounts('waiting-children', 'wait'), { 'waiting-children': 1, wait: 1 });
  assert.deepEqual(
    (await parents.getJobs(['waiting-children'])).map((j) => j.id),
    [parentId],
  );
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 3, ignored: 0, failed: 0 });

  let parentSaw: Record<string, unknown> | undefined;
  const stepWorker = new Worker('steps', async (job: Job) => job.data.n * 10, { connection, concurrency: 2 });
  const renderWorker = new Worker(
    'renders',
    async (job: Job) => {
      if (job.name === 'step') return job.data.n * 10;
      parentSaw = await job.getChildrenValues();
      return 'rendered';
    },
    { connection },
  );
  t.after(() => Promise.all([stepWorker.close(), renderWorker.close()]));

  await waitFor(async () => (await parents.getJob(parentId))?.returnvalue === 'rendered', { timeoutMs: 20_000 });
  const values = Object.values(parentSaw ?? {}).sort();
  assert.deepEqual(values, [10, 20, 30]);
  const keys = Object.keys(parentSaw ?? {}).sort();
  assert.ok(
    keys.every((k) => /^[^:]+:(steps|renders):[0-9a-f-]+$/.test(k)),
    `child keys: ${keys}`,
  );
  const deps = await (await parents.getJob(parentId))?.getDependencies();
  assert.equal(Object.keys(deps?.processed ?? {}).length, 3);
  assert.deepEqual(deps?.unprocessed, []);
});

test('failParentOnFailure fails the parent; ignoreDependencyOnFailure lets it go on', async (t) => {
  const { connection, flow, queue } = await bullFlowEnv(t);
  const failing = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [
      { name: 'bad', queueName: 'q', data: {}, opts: { failParentOnFailure: true } },
      { name: 'slow', queueName: 'q', data: { wait: true } },
    ],
  });
  const ignoring = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [
      { name: 'bad', queueName: 'q', data: {}, opts: { ignoreDependencyOnFailure: true } },
      { name: 'good', queueName: 'q', data: {} },
    ],
  });
  let ran = 0;
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name === 'bad') throw new Error('child broke');
      if (job.name === 'parent') ran++;
      return job.name;
    },
    { connection, concurrency: 3 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await failing.job.getState()) === 'failed', { timeoutMs: 20_000 });
  const failed = await queue.getJob(failing.job.id as string);
  assert.match(failed?.failedReason ?? '', /^child .+:q:.+ failed$/);
  await waitFor(async () => (await ignoring.job.getState()) === 'completed', { timeoutMs: 20_000 });
  const ignored = await (await queue.getJob(ignoring.job.id as string))?.getIgnoredChildrenFailures();
  assert.deepEqual(Object.values(ignored ?? {}), ['child broke']);
  assert.equal(ran, 1, 'only the ignoring parent ran its processor');
});

test('a plain failure leaves the parent waiting; removing the child releases it', async (t) => {
  const { connection, flow } = await bullFlowEnv(t);
  const tree = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [{ name: 'bad', queueName: 'q', data: {} }],
  });
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name === 'bad') throw new Error('child broke');
      return 'parent done';
    },
    { connection },
  );
  t.after(() => worker.close());
  const child = tree.children?.[0]?.job as Job;
  await waitFor(async () => (await child.getState()) === 'failed', { timeoutMs: 20_000 });
  assert.equal(await tree.job.getState(), 'waiting-children');
  await child.remove();
  await waitFor(async () => (await tree.job.getState()) === 'completed', { timeoutMs: 20_000 });
});

test('a job added with opts.parent joins a parent; a missing parent is refused', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('q', { connection });
  t.after(() => queue.close());
  await assert.rejects(
    queue.add('orphan', {}, { parent: { id: 'nope', queue: `${queue.qualifiedName}` } }),
    /Missing key for parent job .*nope/,
  );
  assert.equal(await queue.count(), 0);
  const parent = await queue.add('parent', {}, { delay: 60_000 });
  const child = await queue.add('child', { v: 7 }, { parent: { id: parent.id as string, queue: queue.qualifiedName } });
  assert.equal(child.parentKey, `${queue.qualifiedName}:${parent.id}`);
  assert.deepEqual(await parent.getDependenciesCount(), { processed: 0, unprocessed: 1, ignored: 0, failed: 0 });
  const stored = await queue.getJob(child.id as string);
  assert.equal(stored?.parentKey, `${queue.qualifiedName}:${parent.id}`);
});

test('moveToWaitingChildren parks a running parent until the children it added are done', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('q', { connection });
  t.after(() => queue.close());
  const steps: string[] = [];
  const worker = new Worker(
    'q',
    async (job: Job, token?: string) => {
      if (job.name === 'child') return job.data.v;
      if (!job.data.spawned) {
        await queue.add('child', { v: 1 }, { parent: { id: job.id as string, queue: job.queueQualifiedName } });
        await job.updateData({ spawned: true });
        steps.push('spawned');
        const parked = await job.moveToWaitingChildren(token as string);
        assert.equal(parked, true);
        const { WaitingChildrenError } = await import('bullmq');
        throw new WaitingChildrenError();
      }
      steps.push('resumed');
      return Object.values(await job.getChildrenValues());
    },
    { connection, concurrency: 2 },
  );
  t.after(() => worker.close());
  const parent = await queue.add('parent', {});
  await waitFor(async () => (await parent.getState()) === 'completed', { timeoutMs: 20_000 });
  assert.deepEqual(steps, ['spawned', 'resumed']);
  assert.deepEqual((await queue.getJob(parent.id as string))?.returnvalue, [1]);
});
