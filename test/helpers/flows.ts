/** Test helpers for flows: on the ZooKeeper backend of BullMQ, and on zkq's own FlowProducer. */
import type { TestContext } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { FlowProducer as ZkqFlowProducer, Queue as ZkqQueue } from '@zkq/producer';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv, type QueueTestEnv, queueEnv } from './queue.js';
import { waitFor } from './zk.js';

const { Queue, FlowProducer } = withBackend(createZooKeeperBackend);

/** A fresh namespace with BullMQ's FlowProducer and Queue `q` on the backend, both closed after the test. */
export async function bullFlowEnv(t: TestContext) {
  const { env, connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  t.after(() => Promise.all([flow.close(), queue.close()]));
  return { env, connection, flow, queue };
}

/**
 * A fresh namespace with zkq's FlowProducer and a Queue of each of `names`
 * (`queues[name]`), all closed after the test:
 *
 *   const { env, flows, queues: { parents, kids } } = await flowEnv(t, 'parents', 'kids');
 */
export async function flowEnv<N extends string>(
  t: { name?: string; after: (fn: () => unknown) => void },
  ...names: N[]
): Promise<{ env: QueueTestEnv; flows: ZkqFlowProducer; queues: Record<N, ZkqQueue> }> {
  const env = await queueEnv(t);
  const flows = new ZkqFlowProducer(env);
  const queues = Object.fromEntries(names.map((name) => [name, new ZkqQueue(name, env)])) as Record<N, ZkqQueue>;
  t.after(() => Promise.all([flows.close(), ...Object.values<ZkqQueue>(queues).map((q) => q.close())]));
  return { env, flows, queues };
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
