/**
 * A check of the schedulers reads them in read-only multis, a batch at a
 * time, and the current iterations of those due likewise: checking N
 * schedulers costs about N / batch round trips, not one request per
 * scheduler and one more per due iteration, as it did (heal.test.ts checks
 * what a check heals).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { healSchedulers, openSession, QueueStore } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';

const { Queue } = withBackend(createZooKeeperBackend);

const SCHEDULERS = 120;
/** Schedulers read per read-only multi (schedulers.ts HEAL_READ). */
const BATCH = 50;

test('a check of the schedulers reads them, and the iterations of those due, a batch per request', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('heal-batched', { connection });
  t.after(() => queue.close());
  const ids = Array.from({ length: SCHEDULERS }, (_, i) => `s${i}`);
  for (const id of ids) await queue.upsertJobScheduler(id, { every: 60_000 }, { name: id });

  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'heal-batched');
  await store.init();
  const now = await store.clock.now();
  const before = session.stats.requests;
  const { added } = await healSchedulers(store, now);
  const sent = session.stats.requests - before;
  assert.deepEqual(added, [], 'each scheduler has its next iteration: nothing to heal');
  // the listing, the schedulers' batches, and the batches of the current iterations of those due
  const most = 1 + 2 * Math.ceil(SCHEDULERS / BATCH);
  t.diagnostic(`a check of ${SCHEDULERS} schedulers sent ${sent} requests`);
  assert.ok(sent <= most, `${sent} requests for ${SCHEDULERS} schedulers, at most ${most}`);
});
