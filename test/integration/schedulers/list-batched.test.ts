/**
 * A listing of the schedulers (Queue.getJobSchedulers) reads them in
 * read-only multis, a batch at a time, as a check of the schedulers does
 * (heal-batched.test.ts): listing N schedulers costs about N / batch round
 * trips, not one request per scheduler, as it did.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { listSchedulers, openSession, QueueStore } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';

const { Queue } = withBackend(createZooKeeperBackend);

const SCHEDULERS = 120;
/** Schedulers read per read-only multi (schedulers.ts HEAL_READ). */
const BATCH = 50;

test('a listing of the schedulers reads them a batch per request, all of them, by their next time', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('list-batched', { connection });
  t.after(() => queue.close());
  const ids = Array.from({ length: SCHEDULERS }, (_, i) => `s${i}`);
  for (const [i, id] of ids.entries()) await queue.upsertJobScheduler(id, { every: 60_000 + i * 1000 }, { name: id });

  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'list-batched');
  await store.init();
  const before = session.stats.requests;
  const listed = await listSchedulers(store);
  const sent = session.stats.requests - before;
  assert.deepEqual(listed.map((s) => s.id).sort(), [...ids].sort(), 'every scheduler listed');
  const nexts = listed.map((s) => s.next);
  assert.deepEqual(
    nexts,
    [...nexts].sort((a, b) => a - b),
    'by the time of their current iteration',
  );
  // the listing of the schedulers, then their batches
  const most = 1 + Math.ceil(SCHEDULERS / BATCH);
  t.diagnostic(`a listing of ${SCHEDULERS} schedulers sent ${sent} requests`);
  assert.ok(sent <= most, `${sent} requests for ${SCHEDULERS} schedulers, at most ${most}`);
  assert.equal((await queue.getJobSchedulers(0, -1)).length, SCHEDULERS, 'the BullMQ listing too');
});
