/**
 * A finish written without its claim (the claim vanished with an expired
 * session) may meet the re-claim the renewer made meanwhile, on the new
 * session. Nothing else removes that claim once the finish has moved the
 * job on: the leader revokes only a claim whose pointer is at its token,
 * and the finish deleted the pointer. So the re-claim must go with the
 * finish, even when the link fails again right after it and nothing more
 * can be read or written for a while (a read given up after its retries):
 * left, it would hold the job, retried and waiting, from every worker for
 * as long as this worker's session lives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError } from '@zkq/core';
import { claimJobs, finishJobs, leaseOf, lookAtHead, QueueStore, renewLeases } from '@zkq/core/internal';
import { claimedThenExpired, twoWorkers } from '../../../helpers/claim-race.js';

const OPTS = { workerId: 'mine', lockDuration: 600_000 };

test('a finish without its claim takes the re-claim made meanwhile with it, nothing read after it', async (t) => {
  const { mine, other, store, layout } = await twoWorkers(t, 'claimless-reclaim');
  const job = await claimedThenExpired(store, mine, OPTS);

  const multi = mine.multi.bind(mine);
  let reclaimed = false;
  let finished = false;
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const writesRecord = ops.some((op) => op.path === layout.job('x'));
    // without its claim, the finish creates and deletes the claim node (only while none is there)
    const claimless =
      !ops.some((op) => op.op === 'delete' && op.path === layout.claim('x')) ||
      ops.some((op) => op.op === 'create' && op.path === layout.claim('x'));
    if (writesRecord && claimless && !reclaimed) {
      // the finish without its claim: the renewer re-creates the claim just before it goes out
      reclaimed = true;
      assert.deepEqual(await renewLeases(store, [leaseOf(job)], OPTS), []);
    }
    const results = await multi(ops);
    if (writesRecord) finished = true;
    return results;
  }) as typeof mine.multi;
  // once the finish committed, the link fails again for a while: every read is given up
  const readMulti = mine.readMulti.bind(mine);
  mine.readMulti = ((reads: Parameters<typeof readMulti>[0]) => {
    if (finished) return Promise.reject(new ConnectionLossError(reads[0]?.path));
    return readMulti(reads);
  }) as typeof mine.readMulti;

  const [result] = await finishJobs(store, [
    { job, outcome: { kind: 'retry', reason: 'again', stacktrace: [], due: 0 } },
  ]);
  assert.deepEqual(result, { ok: true });
  assert.ok(reclaimed, 'the re-claim was made before the finish went out');
  mine.readMulti = readMulti;
  assert.equal(await other.exists(layout.claim('x')), null, 'no claim left with the job waiting');

  // the job, waiting again, is another worker's to take at once
  const theirs = new QueueStore(other, 'claimless-reclaim');
  await theirs.init();
  const { candidates: again } = await lookAtHead(theirs, { limit: 10, exclude: [] });
  const {
    claimed: [next],
  } = await claimJobs(theirs, again, { ...OPTS, workerId: 'other' });
  assert.ok(next, 'another worker claims the job');
  assert.equal(next.record.attemptsMade, 1);
});
