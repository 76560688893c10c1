/**
 * An iteration claimed late (it waited for a free worker, or for the session
 * of a claimer that died before advancing to expire) advances its scheduler
 * from the time of its claim: the next iteration is the first tick after the
 * claim, missed ticks skipped. A claim writes no record, and the advance took
 * ZooKeeper's time from the record's mtime (its add or promotion): it added
 * the tick right after the late one, already past when added, as a delayed
 * job late from the start (a fault soak saw one start 10.4 s past its tick).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { iterationId, openSession, QueueStore, readScheduler } from '@zkq/core/internal';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

const EVERY = 1000;

test('an iteration claimed several ticks late adds the first tick after its claim, none already past', async (t) => {
  const env = await queueEnv(t);
  const q = 'late-claim';
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, q);
  const queue = new Queue(q, { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('tick', { every: EVERY }, { name: 'tick' });
  const first = (await readScheduler(store, 'tick'))?.record.next as number;
  // no worker yet: the first iteration waits past several ticks before its claim
  await sleep(3.5 * EVERY);
  const claims = new Map<string, number>();
  const worker = new ZkqWorker(
    q,
    async (job) => {
      // ZooKeeper's time of this attempt's claim: its claim node's ctime
      const stat = await session.exists(store.layout.claim(job.id as string));
      if (stat) claims.set(job.id as string, stat.ctime);
    },
    { ...env, drainDelay: 1 },
  );
  t.after(() => worker.close());
  const firstId = iterationId('tick', first);
  await waitFor(() => claims.has(firstId), { timeoutMs: 15_000, what: 'the first iteration ran' });
  const claimed = claims.get(firstId) as number;
  await waitFor(async () => ((await readScheduler(store, 'tick'))?.record.next ?? first) > first, {
    what: 'the scheduler advanced',
  });
  await worker.close();
  const next = (await readScheduler(store, 'tick'))?.record.next as number;
  assert.ok(claimed - first >= 3 * EVERY, `the first iteration claimed ${claimed - first} ms past its tick`);
  assert.ok(
    next > claimed,
    `the next tick (${next - first} ms after the first) comes after the claim (${claimed - first} ms after it)`,
  );
  assert.equal((next - first) % EVERY, 0, 'the next tick keeps to the schedule');
});
