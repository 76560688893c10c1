/**
 * A job whose worker died holding it (its claim gone with its session, no
 * revocation) counts that attempt as a stall at its next claim: the claim's
 * token is past the claims its record has counted on that pointer. A change
 * of priority moves the waiting job to a new pointer first: the attempt that
 * died on the old one must still be counted (stalledCounter, attemptsStarted).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { claimJobs, openSession, QueueStore, scanHead } from '@zkq/core/internal';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('changePriority of a job whose worker died holding it: that attempt is still counted as a stall', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('dead-moved', { connection });
  const zkq = new ZkqQueue('dead-moved', env);
  t.after(() => Promise.all([queue.close(), zkq.close()]));
  const job = await queue.add('x', {}, { jobId: 'd' });
  // a worker claims it and dies: its session ends with the claim, nobody revokes it
  const session = await openSession(env.connection, env.prefix);
  const store = new QueueStore(session, 'dead-moved');
  const candidates = await scanHead(store, { limit: 1, exclude: new Set() });
  const { claimed } = await claimJobs(store, candidates, { workerId: 'dead', lockDuration: 60_000 });
  assert.equal(claimed.length, 1);
  await session.close();
  await job.changePriority({ priority: 3 });
  const worker = new Worker('dead-moved', async () => 'ran', { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job to run' });
  const stored = await zkq.getJob('d');
  assert.equal(stored?.attemptsStarted, 2, 'the attempt that died is started');
  assert.equal(stored?.stalledCounter, 1, 'the attempt that died is a stall');
});
