/**
 * A finish written without its claim (the claim had vanished with an expired
 * session) deletes the re-claim the renewer made meanwhile, read as that
 * attempt's own. Its token alone does not name the attempt: a retried job
 * waits on a new pointer, whose versions count from 0 again, so the same
 * worker's next claim of it, on the same session, carries the same token
 * once renewed. A removal read again after its delete's outcome was lost
 * must leave that next attempt's claim alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError } from '@zkq/core';
import { type ClaimedJob, claimJobs, finishJobs, leaseOf, lookAtHead, renewLeases } from '@zkq/core/internal';
import { twoWorkers } from '../../../helpers/claim-race.js';
import { expire } from '../../../helpers/zk.js';

const OPTS = { workerId: 'mine', lockDuration: 600_000 };

test("a re-claim's removal read again leaves the worker's next attempt of the job, at the same token, alone", async (t) => {
  const { mine, store, layout } = await twoWorkers(t, 'reclaim-next-attempt');
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const {
    claimed: [job],
  } = await claimJobs(store, candidates, OPTS);
  assert.ok(job);
  await expire(mine); // the claim vanishes with the session; the pointer stays at the token

  const multi = mine.multi.bind(mine);
  let stage = 'finish';
  let next: ClaimedJob | undefined;
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const deletesClaim = ops.some((op) => op.op === 'delete' && op.path === layout.claim('x'));
    const deletesPointer = ops.some((op) => op.op === 'delete' && op.path === job.pointer);
    if (stage === 'finish' && deletesPointer && !deletesClaim) {
      // the finish without its claim (a retry, waiting again at once): the renewer re-creates the claim first
      stage = 'reclaim';
      assert.deepEqual(await renewLeases(store, [leaseOf(job)], OPTS), []);
      stage = 'remove';
    } else if (stage === 'remove' && deletesClaim && !deletesPointer) {
      // the re-claim's removal applies, its reply is lost (the session stays); meanwhile this worker
      // claims the job again on its new pointer and renews that claim
      stage = 'staged';
      await multi(ops);
      const { candidates: again } = await lookAtHead(store, { limit: 10, exclude: [] });
      [next] = (await claimJobs(store, again, OPTS)).claimed;
      assert.ok(next, 'the job claimed again');
      assert.equal(next.token, job.token, 'the next attempt has the same token, on another pointer');
      assert.notEqual(next.pointer, job.pointer);
      assert.deepEqual(await renewLeases(store, [leaseOf(next)], OPTS), []);
      throw new ConnectionLossError(ops[0]?.path);
    }
    return multi(ops);
  }) as typeof mine.multi;

  const [result] = await finishJobs(store, [
    { job, outcome: { kind: 'retry', reason: 'again', stacktrace: [], due: 0 } },
  ]);
  assert.deepEqual(result, { ok: true });
  assert.equal(stage, 'staged', 'the re-claim was made, its removal applied and its reply lost');
  assert.ok(next);
  const held = await mine.exists(layout.claim('x'));
  assert.ok(held, "the next attempt's claim node is there still");
  assert.equal(held.ephemeralOwner, mine.sessionId);
  // its lease holds
  assert.deepEqual(await renewLeases(store, [leaseOf(next)], OPTS), []);
});
