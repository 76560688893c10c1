/**
 * A claim writes no record, so `getJob` reads a waiting job's claim node
 * with its record: a claimed job reads `active`, with the claim's start and
 * worker. Both are read in one read-only multi, one round trip, not the
 * record then the claim.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, lookAtHead, QueueStore, type Session } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

/** Counts the requests `run` sends through `session`'s reads. */
async function readsOf(session: Session, run: () => Promise<unknown>): Promise<{ getData: number; readMulti: number }> {
  const counts = { getData: 0, readMulti: 0 };
  const getData = session.getData;
  const readMulti = session.readMulti;
  session.getData = ((...a: Parameters<typeof getData>) => {
    counts.getData++;
    return getData.apply(session, a);
  }) as typeof getData;
  session.readMulti = ((...a: Parameters<typeof readMulti>) => {
    counts.readMulti++;
    return readMulti.apply(session, a);
  }) as typeof readMulti;
  try {
    await run();
  } finally {
    session.getData = getData;
    session.readMulti = readMulti;
  }
  return counts;
}

test('getJob reads a waiting job with its claim in one read-only multi: active while claimed', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('get-claimed', env);
  t.after(() => queue.close());
  await queue.add('j', {}, { jobId: 'x' });
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'get-claimed');
  await store.init();

  let seen = await store.getJob('x');
  assert.deepEqual(await readsOf(session, async () => (seen = await store.getJob('x'))), { getData: 0, readMulti: 1 });
  assert.equal(seen?.record.state, 'waiting');

  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const { claimed } = await claimJobs(store, candidates, { workerId: 'w', lockDuration: 600_000 });
  assert.equal(claimed.length, 1);
  assert.deepEqual(await readsOf(session, async () => (seen = await store.getJob('x'))), { getData: 0, readMulti: 1 });
  assert.equal(seen?.record.state, 'active');
  assert.equal(seen?.record.processedBy, 'w');
  assert.equal(seen?.record.attemptsStarted, 1);
  assert.equal(await store.getJob('missing'), undefined);
});
