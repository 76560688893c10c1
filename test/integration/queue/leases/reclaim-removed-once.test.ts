/**
 * A finish written without its claim (the claim had vanished with an expired
 * session) may meet the re-claim the renewer made meanwhile: the worker then
 * deletes that re-claim, read as its own (its worker and token). The delete
 * goes out once: sent again after its reply was lost with its session, it
 * would go out on the next session, where `claims/<id>` may by then be the
 * claim of the job added again under its id, by another worker, at the same
 * version.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError } from '@zkq/core';
import { claimJobs, finishJobs, leaseOf, lookAtHead, renewLeases } from '@zkq/core/internal';
import { otherHoldsX, readdedAndClaimed, twoWorkers } from '../../../helpers/claim-race.js';
import { expire } from '../../../helpers/zk.js';

const OPTS = { workerId: 'mine', lockDuration: 600_000 };

test("a re-claim's removal lost with its session is not sent again over the claim made since", async (t) => {
  const { env, queue, mine, other, store, layout } = await twoWorkers(t, 'reclaim-removed');
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const {
    claimed: [job],
  } = await claimJobs(store, candidates, OPTS);
  assert.ok(job);
  await expire(mine); // the claim vanishes with the session; the pointer stays at the token

  const multi = mine.multi.bind(mine);
  let stage = 'finish';
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const deletesClaim = ops.some((op) => op.op === 'delete' && op.path === layout.claim('x'));
    const deletesRecord = ops.some((op) => op.op === 'delete' && op.path === layout.job('x'));
    if (stage === 'finish' && deletesRecord && !deletesClaim) {
      // the finish without its claim: the renewer re-creates the claim just before it goes out
      stage = 'reclaim';
      assert.deepEqual(await renewLeases(store, [leaseOf(job)], OPTS), []);
      stage = 'remove';
    } else if (stage === 'remove' && deletesClaim && !deletesRecord) {
      // the re-claim's removal is lost with its connection and the session; the job is added
      // again under its id, and another worker claims it
      stage = 'staged';
      await expire(mine, env.connection.connectionString);
      await readdedAndClaimed(queue, other, layout);
      throw new ConnectionLossError(ops[0]?.path);
    }
    return multi(ops);
  }) as typeof mine.multi;

  const [result] = await finishJobs(store, [{ job, outcome: { kind: 'completed', returnvalue: null, remove: true } }]);
  assert.deepEqual(result, { ok: true });
  assert.equal(stage, 'staged', 'the re-claim was made, then its removal lost with the session');
  await otherHoldsX(other, layout);
});
