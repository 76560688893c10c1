/**
 * Flow events reach a QueueEvents of the parent's queue, even when the
 * parent is released by a child finishing in another queue, in a process
 * that never used the parent's queue before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { FlowProducer, QueueEvents } = withBackend(createZooKeeperBackend);

test("a parent released from another queue's worker logs waiting on its own queue", async (t) => {
  const { env, connection } = await bullEnv(t);
  const events = new QueueEvents('parents', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen: { event: string; jobId: string; prev?: string }[] = [];
  for (const event of ['added', 'waiting-children', 'waiting'] as const) {
    events.on(event as 'waiting', (args: { jobId: string; prev?: string }) =>
      seen.push({ event, jobId: args.jobId, ...(args.prev ? { prev: args.prev } : {}) }),
    );
  }
  const flow = new FlowProducer({ connection });
  t.after(() => flow.close());
  const tree = await flow.add({
    name: 'parent',
    queueName: 'parents',
    children: [{ name: 'child', queueName: 'kids', data: {} }],
  });
  const id = tree.job.id as string;
  // zkq's own Worker on the children's queue: its store meets the parents' queue only to release it
  const kids = new ZkqWorker('kids', async () => 'ok', { connection: env.connection, prefix: env.prefix });
  t.after(() => kids.close());
  await waitFor(() => seen.some((s) => s.event === 'waiting' && s.jobId === id), {
    timeoutMs: 15_000,
    what: 'the waiting event of the released parent',
  });
  assert.deepEqual(
    seen.filter((s) => s.jobId === id),
    [
      { event: 'added', jobId: id },
      { event: 'waiting-children', jobId: id },
      { event: 'waiting', jobId: id, prev: 'waiting-children' },
    ],
  );
});
