/**
 * A flow of 2,000 children on BullMQ's FlowProducer over the ZooKeeper
 * backend (refused with PayloadTooLargeError before flows could be written
 * in several transactions): added, every child runs, the parent runs with
 * all their values. Such a flow naming existing jobs (BullMQ's duplicates,
 * kept as they are): a waiting one counts pending, a completed one processed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const Bull = withBackend(createZooKeeperBackend);
const KIDS = 'children-of-one-very-large-parent-job';

test("a flow of 2,000 children on BullMQ's FlowProducer runs, the parent with all their values", async (t) => {
  const n = 2000;
  const { connection } = await bullEnv(t);
  const flow = new Bull.FlowProducer({ connection });
  t.after(() => flow.close());
  const tree = await flow.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
  });
  assert.equal(tree.children?.length, n);
  assert.equal(await tree.job.getState(), 'waiting-children');
  let values: Record<string, number> = {};
  const kids = new Bull.Worker(KIDS, async (job) => job.data.i as number, { connection, concurrency: 50 });
  const parent = new Bull.Worker(
    'parents',
    async (job) => {
      values = await job.getChildrenValues();
      return 'done';
    },
    { connection },
  );
  t.after(() => Promise.all([kids.close(), parent.close()]));
  const queue = new Bull.Queue('parents', { connection });
  t.after(() => queue.close());
  await waitFor(async () => (await queue.getJob(tree.job.id as string))?.returnvalue === 'done', {
    timeoutMs: 120_000,
    what: 'the parent to complete',
  });
  assert.equal(Object.keys(values).length, n);
});

test("a split flow on BullMQ's FlowProducer naming existing jobs: a waiting one counted pending, a completed one processed, the parent runs once after all", async (t) => {
  const n = 2000;
  const { connection } = await bullEnv(t);
  const flow = new Bull.FlowProducer({ connection });
  const kidsQueue = new Bull.Queue(KIDS, { connection });
  const queue = new Bull.Queue('parents', { connection });
  t.after(() => Promise.all([flow.close(), kidsQueue.close(), queue.close()]));
  // one completed before the flow, one still waiting
  const first = new Bull.Worker(KIDS, async () => 'before', { connection, autorun: false });
  t.after(() => first.close());
  await kidsQueue.add('kid', { i: -1 }, { jobId: 'done-before' });
  first.run();
  await waitFor(async () => (await kidsQueue.getJobState('done-before')) === 'completed', { timeoutMs: 20_000 });
  await first.close();
  await kidsQueue.add('kid', { i: -2 }, { jobId: 'waiting-before' });
  const named = [
    { name: 'kid', queueName: KIDS, data: { i: 0 }, opts: { jobId: 'done-before' } },
    { name: 'kid', queueName: KIDS, data: { i: 0 }, opts: { jobId: 'waiting-before' } },
  ];
  const tree = await flow.add({
    name: 'parent',
    queueName: 'parents',
    // the existing ones last: in the flow's last transaction
    children: [...Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })), ...named],
  });
  assert.equal(tree.children?.length, n + 2);
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 1, unprocessed: n + 1, ignored: 0, failed: 0 });
  let runs = 0;
  let values: Record<string, unknown> = {};
  const kids = new Bull.Worker(KIDS, async (job) => job.data.i as number, { connection, concurrency: 50 });
  const parent = new Bull.Worker(
    'parents',
    async (job) => {
      runs++;
      values = await job.getChildrenValues();
      return 'done';
    },
    { connection },
  );
  t.after(() => Promise.all([kids.close(), parent.close()]));
  await waitFor(async () => (await queue.getJob(tree.job.id as string))?.returnvalue === 'done', {
    timeoutMs: 120_000,
    what: 'the parent to complete',
  });
  assert.equal(runs, 1);
  assert.equal(Object.keys(values).length, n + 2);
  assert.equal(values[`${kidsQueue.qualifiedName}:done-before`], 'before');
  assert.equal(values[`${kidsQueue.qualifiedName}:waiting-before`], -2);
});
