/**
 * A scheduler's iteration advances its scheduler as it starts; that write
 * comes before the proof that the claim is still the worker's, never between
 * the proof and the processor's start. Before, an advance held up past the
 * lease (the worker cut off from the server meanwhile) let the processor
 * start on a claim the leader had revoked: the iteration ran twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend } from '@zkq/bullmq';
import type { Session } from '@zkq/core';
import { Queue as ZkqQueue } from '@zkq/producer';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

/** From the first write that advances scheduler `id`, every transaction of `session` waits `ms` (a partition, for writes). */
function holdFromAdvance(session: Session, queue: string, id: string, ms: number): { held: () => boolean } {
  const original = session.multi.bind(session);
  let release: Promise<void> | undefined;
  session.multi = async (ops) => {
    const advance = ops.some((op) => op.op === 'setData' && op.path.endsWith(`/${queue}/schedulers/s-${id}`));
    if (advance && !release) release = sleep(ms);
    if (release) await release;
    return original(ops);
  };
  return { held: () => release !== undefined };
}

test("a scheduler's iteration whose advance is held up past the lease does not start on a revoked claim", async (t) => {
  const env = await queueEnv(t);
  const q = 'proof';
  const runs: string[] = [];
  // the leader: busy with one long job, it only revokes
  let unblock: () => void = () => undefined;
  const blocked = new Promise<void>((resolve) => {
    unblock = resolve;
  });
  const producer = new ZkqQueue(q, env);
  t.after(() => producer.close());
  await producer.add('blocker', null);
  const leader = new ZkqWorker(q, async (job) => (job.name === 'blocker' ? blocked : runs.push(`leader ${job.id}`)), {
    ...env,
    concurrency: 1,
    stalledInterval: 300,
    drainDelay: 1,
  });
  t.after(async () => {
    unblock();
    await leader.close();
  });
  await waitFor(async () => (await producer.getJobCounts('active')).active === 1, {
    what: 'the leader runs the blocker',
  });
  await waitFor(() => leader.isLeader, { what: 'the leader elected' });
  const worker = new ZkqWorker(q, async (job) => void runs.push(`worker ${job.id} token ${job.token}`), {
    ...env,
    housekeeping: false,
    lockDuration: 1000,
    drainDelay: 1,
  });
  t.after(() => worker.close());
  const hold = holdFromAdvance(await worker.client, q, 'tick', 4000);
  const queue = new Queue(q, { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('tick', { every: 60_000 }, { name: 'tick' });
  await waitFor(() => hold.held(), { timeoutMs: 15_000, what: 'the first advance held' });
  // the lease lapses during the hold, the leader revokes; then the worker claims the iteration again
  await waitFor(() => runs.length >= 1, { timeoutMs: 20_000, what: 'the iteration ran' });
  await sleep(1500);
  assert.equal(runs.length, 1, `the iteration ran once: ${runs.join(', ')}`);
});
