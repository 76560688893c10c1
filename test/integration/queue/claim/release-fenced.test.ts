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
import { otherHoldsX, readdedAndClaimed, twoWorkers } from '../../../helpers/claim-race.js';
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

test('a claim released after a revocation does not delete the claim another worker made since', async (t) => {
  const { mine, other, store, layout } = await twoWorkers(t, 'release-fenced');
  await other.delete(layout.job('x')); // a pointer left without its record: the claim is released
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const [candidate] = candidates;
  assert.ok(candidate);
  afterFirstRead(mine, async () => {
    // the leader revokes this claim (at the version judged, the pointer at its token)...
    const pointer = await other.exists(candidate.pointer);
    assert.ok(pointer);
    await other.multi([
      { op: 'delete', path: layout.claim('x'), version: 0 },
      { op: 'setData', path: candidate.pointer, data: Buffer.alloc(0), version: pointer.version },
    ]);
    // ...and another worker claims the job
    const claim = claimPayload({ worker: 'other', pointer: candidate.pointer, lockDuration: 600_000, at: Date.now() });
    await other.multi(claimOps(layout, { id: 'x', pointer: candidate.pointer, claim }));
  });
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});

test('a claim released after its pointer went is still released', async (t) => {
  const { mine, other, store, layout } = await twoWorkers(t, 'release-no-pointer');
  await other.delete(layout.job('x'));
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const [candidate] = candidates;
  assert.ok(candidate);
  // the pointer left without its record is dropped (a trim) before the release
  afterFirstRead(mine, () => other.delete(candidate.pointer));
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(got.claimed, []);
  assert.equal(await other.exists(layout.claim('x')), null, 'the claim node is not left behind');
});

test('a claim released after its pointer went does not delete the claim of the job added again since', async (t) => {
  const { queue, mine, other, store, layout } = await twoWorkers(t, 'release-readded');
  await other.delete(layout.job('x'));
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const [candidate] = candidates;
  assert.ok(candidate);
  afterFirstRead(mine, async () => {
    // the leader revokes this claim, the pointer left without its record is dropped (a trim)...
    const pointer = await other.exists(candidate.pointer);
    assert.ok(pointer);
    await other.multi([
      { op: 'delete', path: layout.claim('x'), version: 0 },
      { op: 'setData', path: candidate.pointer, data: Buffer.alloc(0), version: pointer.version },
    ]);
    await other.delete(candidate.pointer);
    // ...the job is added again, with a pointer of its own, and another worker claims it
    await readdedAndClaimed(queue, other, layout, candidate.pointer);
  });
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});

test('a claim settled by its receipt, its pointer gone, is not released on the next session over the claim made since', async (t) => {
  const { env, queue, mine, other, store, layout } = await twoWorkers(t, 'release-next-session');
  await other.delete(layout.job('x'));
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const [candidate] = candidates;
  assert.ok(candidate);
  const multi = mine.multi.bind(mine);
  let lost = false;
  let staged = false;
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!lost) {
      // the claim commits and its reply is lost (settled by its receipt); the pointer left without its
      // record is dropped meanwhile (a trim), so the read after it finds this claim's node and no pointer
      lost = true;
      await multi(ops);
      await other.delete(candidate.pointer);
      throw new ConnectionLossError(ops[0]?.path);
    }
    if (!staged && ops.some((op) => op.op === 'delete' && op.path === layout.claim('x'))) {
      // the release is lost with its connection, and the session (its claim node with it); the job is
      // added again and another worker claims it
      staged = true;
      await expire(mine, env.connection.connectionString);
      await readdedAndClaimed(queue, other, layout, candidate.pointer);
      throw new ConnectionLossError(ops[0]?.path);
    }
    return multi(ops);
  }) as typeof mine.multi;
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.ok(staged, 'the claim was released');
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});

test('a release lost with its session is not sent again on the next session over the claim made since', async (t) => {
  const { env, queue, mine, other, store, layout } = await twoWorkers(t, 'release-resent');
  await other.delete(layout.job('x')); // a pointer left without its record: the claim is released
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const [candidate] = candidates;
  assert.ok(candidate);
  const multi = mine.multi.bind(mine);
  let staged = false;
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!staged && ops.some((op) => op.op === 'delete' && op.path === layout.claim('x'))) {
      // the release is lost with its connection, and the session (its claim node with it, the pointer left
      // at its token); the job is added again and another worker claims it
      staged = true;
      await expire(mine, env.connection.connectionString);
      await readdedAndClaimed(queue, other, layout, candidate.pointer);
      throw new ConnectionLossError(ops[0]?.path);
    }
    return multi(ops);
  }) as typeof mine.multi;
  const got = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.ok(staged, 'the claim was released');
  assert.deepEqual(got.claimed, []);
  await otherHoldsX(other, layout);
});
