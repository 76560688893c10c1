/**
 * An `every` scheduler keeps its grid when it is upserted again after its
 * current iteration was taken (running, not replaceable) and its next slot
 * is already past: the catch-up lands on the same grid, not on the epoch's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { claimJobs, openSession, QueueStore, scanHead } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';

const { Queue } = withBackend(createZooKeeperBackend);

const tickOf = (id: string) => Number(id.split(':').pop());

test('an upsert after a missed slot catches up on the scheduler’s own grid', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('grid', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  const every = 400;
  const first = await queue.upsertJobScheduler('grid', { every }, { name: 'tick' });
  const firstTick = tickOf(first?.id as string);

  // a worker takes the first iteration (it is running, so an upsert cannot replace it)
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'grid');
  await store.init();
  const head = await scanHead(store, { limit: 10, exclude: new Set() });
  const { claimed } = await claimJobs(
    store,
    head.filter((c) => c.id === first?.id),
    { workerId: 'w', lockDuration: 60_000 },
  );
  assert.equal(claimed.length, 1);

  await sleep(3 * every); // the next slot is in the past now
  const again = await queue.upsertJobScheduler('grid', { every }, { name: 'tick' });
  const tick = tickOf(again?.id as string);
  assert.ok(tick > firstTick, `${tick} after ${firstTick}`);
  assert.equal((tick - firstTick) % every, 0, `tick ${tick} is a whole number of intervals after ${firstTick}`);
});
