/** Test helpers for flows on the ZooKeeper backend of BullMQ. */
import type { TestContext } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from './queue.js';

const { Queue, FlowProducer } = withBackend(createZooKeeperBackend);

/** A fresh namespace with a FlowProducer and BullMQ's Queue `q` on it, both closed after the test. */
export async function flowEnv(t: TestContext) {
  const { env, connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  t.after(() => Promise.all([flow.close(), queue.close()]));
  return { env, connection, flow, queue };
}
