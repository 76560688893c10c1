/**
 * A flow node whose custom id is taken refuses the whole flow (docs/flows.md:
 * "a taken custom id refused"). zkq's FlowProducer says so with
 * JobExistsError (ZKQ_JOB_EXISTS, naming the queue and id); BullMQ's
 * FlowProducer on @zkq/bullmq gets the raw ZooKeeper NodeExistsError of the
 * record's create (ZK_NODE_EXISTS, a znode path) instead.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';

const { Queue, FlowProducer } = withBackend(createZooKeeperBackend);

test("BullMQ's FlowProducer: a flow with a taken custom id is refused with a typed error, nothing written", async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  t.after(() => Promise.all([flow.close(), queue.close()]));
  await queue.add('taken', {}, { jobId: 'taken' });
  await assert.rejects(
    flow.add({ name: 'parent', queueName: 'q', children: [{ name: 'kid', queueName: 'q', opts: { jobId: 'taken' } }] }),
    (err: Error & { code?: string; queue?: string; jobId?: string }) => {
      assert.equal(err.code, 'ZKQ_JOB_EXISTS', `${err.name}: ${err.message}`);
      assert.deepEqual([err.queue, err.jobId], ['q', 'taken']);
      return true;
    },
  );
  assert.deepEqual(await queue.getJobCounts('waiting', 'waiting-children'), { waiting: 1, 'waiting-children': 0 });
});
