/**
 * A flow naming jobs that exist already, on the ZooKeeper backend (BullMQ's
 * duplicated ids): the existing job is kept as it is and joins the new
 * parent, as a pending child, or processed when it completed; one with
 * another live parent is refused; a running one cannot be given a parent.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

test('an existing waiting job named as a child becomes a pending dependency of the new parent', async (t) => {
  const { connection, flow, queue } = await bullFlowEnv(t);
  await queue.add('draft', { v: 1 }, { jobId: 'draft' });
  const tree = await flow.add({
    name: 'book',
    queueName: 'q',
    opts: { jobId: 'book' },
    children: [
      { name: 'draft', queueName: 'q', data: { v: 99 }, opts: { jobId: 'draft' } },
      { name: 'cover', queueName: 'q', data: { v: 2 } },
    ],
  });
  assert.equal(await tree.job.getState(), 'waiting-children');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });
  const draft = (await queue.getJob('draft')) as Job;
  assert.deepEqual(draft.data, { v: 1 }, 'the existing job is kept as it was');
  assert.equal(draft.parentKey, `${queue.qualifiedName}:book`);

  // the same flow again changes nothing
  await flow.add({
    name: 'book',
    queueName: 'q',
    opts: { jobId: 'book' },
    children: [{ name: 'draft', queueName: 'q', opts: { jobId: 'draft' } }],
  });
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });

  const worker = new Worker('q', async (job: Job) => (job.name === 'book' ? job.getChildrenValues() : job.data.v), {
    connection,
  });
  t.after(() => worker.close());
  await waitFor(async () => (await tree.job.getState()) === 'completed');
  const values = (await queue.getJob('book'))?.returnvalue as Record<string, number>;
  assert.deepEqual(Object.values(values).sort(), [1, 2]);
});

test('an existing completed job named as the only child lets the new parent run at once', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  const worker = new Worker('q', async (job: Job) => (job.name === 'sum' ? job.getChildrenValues() : 'early'), {
    connection,
  });
  t.after(() => Promise.all([flow.close(), queue.close(), worker.close()]));
  const early = await queue.add('early', {}, { jobId: 'early' });
  await waitFor(async () => (await early.getState()) === 'completed');
  const tree = await flow.add({
    name: 'sum',
    queueName: 'q',
    children: [{ name: 'early', queueName: 'q', opts: { jobId: 'early' } }],
  });
  await waitFor(async () => (await tree.job.getState()) === 'completed');
  const values = (await queue.getJob(tree.job.id as string))?.returnvalue as Record<string, string>;
  assert.deepEqual(Object.values(values), ['early']);
});

test('a job whose parent exists cannot be given another; a running job cannot be given one', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  const solos = new Queue('solos', { connection });
  const worker = new Worker('solos', null, { connection });
  t.after(() => Promise.all([flow.close(), queue.close(), solos.close(), worker.close()]));
  await flow.add({
    name: 'first',
    queueName: 'q',
    opts: { jobId: 'first' },
    children: [{ name: 'kid', queueName: 'q', opts: { jobId: 'kid' } }],
  });
  await queue.add('second', {}, { jobId: 'second' });
  await assert.rejects(queue.add('kid', {}, { jobId: 'kid', parent: { id: 'second', queue: queue.qualifiedName } }), {
    message: `The parent job ${queue.qualifiedName}:second cannot be replaced. addJob`,
  });
  assert.equal((await queue.getJob('kid'))?.parentKey, `${queue.qualifiedName}:first`);

  await solos.add('solo', {}, { jobId: 'solo' });
  const before = await queue.getJobCounts();
  const running = (await worker.getNextJob('tok')) as Job;
  await assert.rejects(
    flow.add({ name: 'third', queueName: 'q', children: [{ name: 'x', queueName: 'solos', opts: { jobId: 'solo' } }] }),
    { code: 'ZKQ_JOB_STATE' },
  );
  assert.equal(await running.getState(), 'active');
  assert.deepEqual(await queue.getJobCounts(), before, 'nothing of the refused flow was added');
});

test('a flow node alone keeps its deduplication key; in a bulk add a tree whose parent is missing fails alone', async (t) => {
  const { flow, queue } = await bullFlowEnv(t);
  const dedup = { id: 'nightly' };
  const first = await flow.add({ name: 'report', queueName: 'q', data: { n: 1 }, opts: { deduplication: dedup } });
  const second = await flow.add({ name: 'report', queueName: 'q', data: { n: 2 }, opts: { deduplication: dedup } });
  assert.equal(second.job.id, first.job.id);
  assert.equal(await queue.getDeduplicationJobId('nightly'), first.job.id);

  const [kept, orphan, tree] = await flow.addBulk([
    { name: 'report', queueName: 'q', opts: { deduplication: dedup } },
    { name: 'orphan', queueName: 'q', opts: { parent: { id: 'missing', queue: queue.qualifiedName } } },
    { name: 'parent', queueName: 'q', children: [{ name: 'kid', queueName: 'q' }] },
  ]);
  assert.equal(kept?.job.id, first.job.id);
  assert.equal(await queue.getJob(orphan?.job.id as string), undefined);
  assert.equal(await tree?.job.getState(), 'waiting-children');
  assert.equal(await queue.count(), 3, 'the report, the parent and its kid');
});
