/** Test helpers for flows: on the ZooKeeper backend of BullMQ, and on zkq's own FlowProducer. */
import type { TestContext } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { FlowProducer as ZkqFlowProducer, Queue as ZkqQueue } from '@zkq/producer';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv, type QueueTestEnv, queueEnv } from './queue.js';
import { waitFor } from './zk.js';

const { Queue, FlowProducer } = withBackend(createZooKeeperBackend);

/** A fresh namespace with a FlowProducer and BullMQ's Queue `q` on it, both closed after the test. */
export async function flowEnv(t: TestContext) {
  const { env, connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  t.after(() => Promise.all([flow.close(), queue.close()]));
  return { env, connection, flow, queue };
}

/**
 * A fresh namespace with zkq's FlowProducer, its Queue `parents` and a Queue
 * of each of `more`, all closed after the test.
 */
export async function zkqFlowEnv(t: { name?: string; after: (fn: () => unknown) => void }, ...more: string[]) {
  const env = await queueEnv(t);
  const flows = new ZkqFlowProducer(env);
  const parents = new ZkqQueue('parents', env);
  const queues = more.map((name) => new ZkqQueue(name, env));
  t.after(() => Promise.all([flows.close(), parents.close(), ...queues.map((q) => q.close())]));
  return { env, flows, parents, queues };
}

/**
 * Runs a flow's children of queue `kids` (each returns its `data.i`) and the
 * parents of queue `parents` (each returns how many child values it read),
 * workers closed after the test, until the parent `id` completes. Resolves
 * with how many times a parent ran.
 */
export async function runToParent(
  t: { after: (fn: () => unknown) => void },
  env: QueueTestEnv,
  kids: string,
  parents: ZkqQueue,
  id: string,
): Promise<number> {
  let runs = 0;
  const kidsWorker = new ZkqWorker(kids, async (job) => job.data.i, { ...env, concurrency: 20 });
  const worker = new ZkqWorker(
    'parents',
    async (job) => {
      runs++;
      return Object.keys(await job.getChildrenValues()).length;
    },
    env,
  );
  t.after(() => Promise.all([kidsWorker.close(), worker.close()]));
  await waitFor(async () => (await parents.getJobState(id)) === 'completed', {
    timeoutMs: 120_000,
    what: 'the parent to complete',
  });
  return runs;
}
