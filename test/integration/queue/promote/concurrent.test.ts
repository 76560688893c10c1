/**
 * Any worker may promote due delayed jobs (the leader and every standby), so
 * two promoters may read the same jobs at once: each move rewrites the
 * job's record at the version read and deletes its delayed pointer, so one
 * of them moves a job and the other's move fails harmlessly. No job is
 * promoted twice (one ready pointer each), none is lost.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSession, promoteDue, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const JOBS = 200;
const DELAY_MS = 300;

test('two promoters at once: every due job is moved once, none twice, none lost', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('promote-race', env);
  t.after(() => queue.close());
  const stores = await Promise.all(
    [0, 1].map(async () => {
      const session = await openSession(env.connection, env.prefix);
      t.after(() => session.close());
      const store = new QueueStore(session, 'promote-race');
      await store.init();
      return store;
    }),
  );
  const [a, b] = stores as [QueueStore, QueueStore];
  for (let round = 0; round < 3; round++) {
    const jobs = await queue.addBulk(
      Array.from({ length: JOBS }, (_, i) => ({ name: 'd', data: { round, i }, opts: { delay: DELAY_MS } })),
    );
    // due on ZooKeeper's clock; the margin covers the producer's clock, on which timestamps are
    const due = Math.max(...jobs.map((j) => j.timestamp + DELAY_MS)) + 500;
    await waitFor(async () => (await a.clock.now()) > due, { what: 'every job due' });
    const now = await a.clock.now();
    const [byA, byB] = await Promise.all([
      promoteDue(a, undefined, undefined, now),
      promoteDue(b, undefined, undefined, now),
    ]);
    t.diagnostic(`round ${round}: ${byA.promoted.length} moved by one, ${byB.promoted.length} by the other`);
    const both = byA.promoted.filter((id) => byB.promoted.includes(id));
    assert.deepEqual(both, [], `round ${round}: no job moved by both`);
    assert.deepEqual(
      [...byA.promoted, ...byB.promoted].sort(),
      jobs.map((j) => j.id).sort(),
      `round ${round}: every job moved`,
    );
    const counts = await queue.getJobCounts('waiting', 'delayed');
    assert.deepEqual(counts, { waiting: JOBS * (round + 1), delayed: 0 }, `round ${round}: one ready pointer each`);
    for (const j of jobs) assert.equal(await queue.getJobState(j.id), 'waiting');
  }
});
