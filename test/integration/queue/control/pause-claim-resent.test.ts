/**
 * A claim whose reply was lost with the connection is read back (its
 * receipt) and sent again. When the queue was paused meanwhile, the claim
 * sent again must still check the pause flag at the version it was read
 * unset at: the pause committed first, so nothing may be claimed, whatever
 * the worker has learnt of the flag since (nothing yet, or "paused").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend, type ZooKeeperQueueBackend } from '@zkq/bullmq';
import { ConnectionLossError, type Op, type Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv, queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const { Worker: BullWorker } = withBackend(createZooKeeperBackend);

/**
 * The first claim transaction is lost with the connection (never applied)
 * after `pause` committed and the session saw its watch; resolves with what
 * became of the claim sent again.
 */
function loseFirstClaim(session: Session, pause: () => Promise<void>, meta: string) {
  const outcomes: ('committed' | 'failed')[] = [];
  let lost = false;
  const multi = session.multi.bind(session);
  session.multi = (async (ops: readonly Op[]) => {
    const claim = ops.some((op) => op.op === 'create' && op.path.includes('/claims/'));
    if (!claim) return multi(ops);
    if (!lost) {
      lost = true;
      await pause();
      await session.exists(meta); // the worker's session has seen the flag's watch fire by now
      throw new ConnectionLossError();
    }
    try {
      const r = await multi(ops);
      outcomes.push('committed');
      return r;
    } catch (err) {
      outcomes.push('failed');
      throw err;
    }
  }) as typeof session.multi;
  return outcomes;
}

test('zkq Worker: a claim sent again after a lost reply does not commit over a pause', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('resent', env);
  t.after(() => queue.close());
  const started: string[] = [];
  const worker = new Worker('resent', async (job) => void started.push(job.id as string), {
    ...env,
    concurrency: 1,
    housekeeping: false,
  });
  t.after(() => worker.close());
  const session = await worker.client;
  const meta = `/resent/meta`;
  const outcomes = loseFirstClaim(session, () => queue.pause(), meta);
  const job = await queue.add('j', {});
  await waitFor(() => outcomes.length > 0, { what: 'the claim sent again' });
  const state = await queue.getJobState(job.id as string);
  assert.deepEqual(outcomes, ['failed'], `the claim sent again failed its pause check (job ${state})`);
  assert.equal(state, 'waiting');
  await queue.resume();
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed' || undefined, {
    what: 'the job run after the resume',
  });
});

test("BullMQ's Worker: a claim sent again after a lost reply does not commit over a pause", async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('resent-bull', env);
  t.after(() => queue.close());
  const worker = new BullWorker('resent-bull', async () => 'ok', { connection, drainDelay: 1 });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  const session = await (worker.getBackend() as unknown as ZooKeeperQueueBackend).ctx.shared.get();
  const outcomes = loseFirstClaim(session, () => queue.pause(), '/resent-bull/meta');
  const job = await queue.add('j', {});
  await waitFor(() => outcomes.length > 0, { what: 'the claim sent again' });
  const state = await queue.getJobState(job.id as string);
  assert.deepEqual(outcomes, ['failed'], `the claim sent again failed its pause check (job ${state})`);
  assert.equal(state, 'waiting');
});
