/**
 * A claim of a job found not claimable after all (its record gone, here) is
 * released again. The release must delete this attempt's claim node only:
 * when the worker was away long enough for the leader to revoke the claim
 * and another worker to claim the same job, the node at `claims/<id>` is
 * that worker's, and deleting it would let a third take the job beside it.
 * With its pointer gone too (dropped, the job added again under its id and
 * claimed by another worker), no token tells the nodes apart: the node is
 * deleted only while it is this claim's own.
 * The moments are staged on the server between the claim's read of the
 * record and its release, as a frozen link would let them happen.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError } from '@zkq/core';
import { claimJobs, claimOps, claimPayload, lookAtHead, type Session } from '@zkq/core/internal';
import { otherHoldsX, readdedAndClaimed, revokeX, twoWorkers } from '../../../helpers/claim-race.js';
import { expire } from '../../../helpers/zk.js';

/** Runs `between` once, right after the first read-only multi of `session` (the claim's read of its records). */
function afterFirstRead(session: Session, between: () => Promise<void>): void {
  const readMulti = session.readMulti.bind(session);
  let staged = false;
  session.readMulti = (async (reads: Parameters<typeof readMulti>[0]) => {
    const replies = await readMulti(reads);
    if (!staged) {
      staged = true;
      await between();
    }
    return replies;
  }) as typeof session.readMulti;
}

/** Job `x`'s record deleted, its pointer left (a claim of it is released again): the worker's candidates. */
async function pointerWithoutRecord(t: { after(fn: () => unknown): void; name?: string }, name: string) {
  const w = await twoWorkers(t, name);
  await w.other.delete(w.layout.job('x'));
  const { candidates } = await lookAtHead(w.store, { limit: 10, exclude: [] });
  const [candidate] = candidates;
  assert.ok(candidate);
  return { ...w, candidates, candidate };
}

/**
 * The release of `x`'s claim is lost with its connection and the session
 * (its claim node with it); the job is added again and the other worker
 * claims it. `first`, when given, takes the worker's first multi instead.
 */
function loseReleaseWithSession(
  w: Awaited<ReturnType<typeof pointerWithoutRecord>>,
  first?: (send: () => Promise<unknown>) => Promise<never>,
): { staged: boolean } {
  const { mine, env, queue, other, layout, candidate } = w;
  const multi = mine.multi.bind(mine);
  const state = { staged: false };
  let firstDone = first === undefined;
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!firstDone && first) {
      firstDone = true;
      return first(() => multi(ops));
    }
    if (!state.staged && ops.some((op) => op.op === 'delete' && op.path === layout.claim('x'))) {
      state.staged = true;
      await expire(mine, env.connection.connectionString);
      await readdedAndClaimed(queue, other, layout, candidate.pointer);
      throw new ConnectionLossError(ops[0]?.path);
    }
    return multi(ops);
  }) as typeof mine.multi;
  return state;
}

test('a claim released after a revocation does not delete the claim another worker made since', async (t) => {
  const w = await pointerWithoutRecord(t, 'release-fenced'); // a pointer left without its record: the claim is released
  const { mine, other, store, layout, candidates, candidate } = w;
  afterFirstRead(mine, async () => {
    // the leader revokes this claim (at the version judged, the pointer at its token)...
    await revokeX(other, layout, candidate.pointer);
    // ...and another worker claims the job
    const claim = claimPayload({ worker: 'other', pointer: candidate.pointer, lockDuration: 600_000, at: Date.now() });
    await other.multi(claimOps(layout, { id: 'x', pointer: candidate.pointer, claim }));
  });
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});

test('a claim released after its pointer went is still released', async (t) => {
  const w = await pointerWithoutRecord(t, 'release-no-pointer');
  const { mine, other, store, layout, candidates, candidate } = w;
  // the pointer left without its record is dropped (a trim) before the release
  afterFirstRead(mine, () => other.delete(candidate.pointer));
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(got.claimed, []);
  assert.equal(await other.exists(layout.claim('x')), null, 'the claim node is not left behind');
});

test('a claim released after its pointer went does not delete the claim of the job added again since', async (t) => {
  const w = await pointerWithoutRecord(t, 'release-readded');
  const { queue, mine, other, store, layout, candidates, candidate } = w;
  afterFirstRead(mine, async () => {
    // the leader revokes this claim, the pointer left without its record is dropped (a trim)...
    await revokeX(other, layout, candidate.pointer);
    await other.delete(candidate.pointer);
    // ...the job is added again, with a pointer of its own, and another worker claims it
    await readdedAndClaimed(queue, other, layout, candidate.pointer);
  });
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});

test('a claim settled by its receipt, its pointer gone, is not released on the next session over the claim made since', async (t) => {
  const w = await pointerWithoutRecord(t, 'release-next-session');
  const { other, store, layout, candidates, candidate } = w;
  const state = loseReleaseWithSession(w, async (send) => {
    // the claim commits and its reply is lost (settled by its receipt); the pointer left without its
    // record is dropped meanwhile (a trim), so the read after it finds this claim's node and no pointer
    await send();
    await other.delete(candidate.pointer);
    throw new ConnectionLossError();
  });
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.ok(state.staged, 'the claim was released');
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});

test('a release lost with its session is not sent again on the next session over the claim made since', async (t) => {
  const w = await pointerWithoutRecord(t, 'release-resent');
  const { other, store, layout, candidates } = w;
  const state = loseReleaseWithSession(w);
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.ok(state.staged, 'the claim was released');
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});
