/**
 * A job scheduler keeps ticking when an iteration's workers keep dying: the
 * iteration whose stalls pass maxStalledCount fails, and the schedule goes
 * on (BullMQ's Worker adds the next iteration when it takes the current one).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { claimJobs, openSession, QueueStore, scanHead } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('an iteration that stalled past maxStalledCount fails, and its scheduler still adds the next tick', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('beat', { connection });
  t.after(() => queue.close());
  const every = 1000;
  const first = await queue.upsertJobScheduler('beat', { every }, { name: 'tick' });
  const firstId = first?.id as string;
  await waitFor(async () => (await queue.getJob(firstId))?.id, { what: 'the first iteration' });

  // Two workers in a row take the first iteration and die before BullMQ's Worker could add the next
  // one (their sessions end with the claim, before anything else was written).
  for (let death = 0; death < 2; death++) {
    const session = await openSession(env.connection, env.prefix);
    const store = new QueueStore(session, 'beat');
    await store.init();
    const head = await scanHead(store, { limit: 10, exclude: new Set() });
    const candidates = head.filter((c) => c.id === firstId);
    assert.equal(candidates.length, 1, `the first iteration at the head (death ${death + 1})`);
    const { claimed } = await claimJobs(store, candidates, { workerId: `doomed-${death}`, lockDuration: 60_000 });
    assert.equal(claimed.length, 1);
    await session.close();
  }

  const ran: string[] = [];
  const worker = new Worker('beat', async (job) => void ran.push(job.id as string), {
    connection,
    maxStalledCount: 1,
    drainDelay: 1,
  });
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJob(firstId))?.failedReason, { what: 'the first iteration failed' });
  assert.equal((await queue.getJob(firstId))?.failedReason, 'job stalled more than allowable limit');
  // the schedule goes on: a later tick runs
  await waitFor(() => ran.some((id) => id !== firstId), {
    timeoutMs: 15_000,
    what: `a later iteration of the scheduler (ran: ${ran.join(', ')})`,
  });
});
