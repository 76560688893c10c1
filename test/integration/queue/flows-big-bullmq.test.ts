/**
 * A flow of 2,000 children on BullMQ's FlowProducer over the ZooKeeper
 * backend (refused with PayloadTooLargeError before flows could be written
 * in several transactions): added, every child runs, the parent runs with
 * all their values.
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
