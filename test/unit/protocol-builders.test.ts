/**
 * Pins the op order and roles of every protocol builder, and the pure plans
 * around them. Callers decode a failed transaction by the failing op's
 * position and role, so these orders are a contract no type checks.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, mock, test } from 'node:test';
import {
  claimOps,
  type Destination,
  dedupDeleteOp,
  dedupKeyOp,
  dueOfDelayed,
  enqueueOps,
  type Finish,
  fillOp,
  finishOps,
  idOfDelayed,
  type JobRecord,
  LIFO_LANE,
  laneOf,
  moveOps,
  orphanPointerOps,
  PLAIN_LANE,
  parkOps,
  pauseCheckOp,
  planFinish,
  pointerOp,
  promotedRecord,
  QueueLayout,
  reclaimOps,
  releaseOps,
  removeOps,
  renewOps,
  revokeOps,
  rewriteOps,
  settingsCheckOp,
  sortLanes,
  trimOps,
  waitingStateOf,
  windowOps,
} from '@zkq/core/internal';
import { idOfPointer, numberOf } from '../../packages/core/src/queue/layout.ts';

const layout = new QueueLayout('q');
const rec = Buffer.from('{"record":1}');
const claim = Buffer.from('{"claim":1}');
const READY_BUCKET = '/q/ready/p-0000000000/b-0000000003';
const DUE = Date.UTC(2030, 0, 2, 5, 30);
const DELAYED_BUCKET = `${layout.delayHour(DUE)}/b-0000000000`;

const ready: Destination = { kind: 'ready', bucket: READY_BUCKET };
const delayed: Destination = { kind: 'delayed', bucket: DELAYED_BUCKET, due: DUE };
const completed: Destination = { kind: 'completed', bucket: '/q/completed/b-0000000001' };
const failed: Destination = { kind: 'failed', bucket: '/q/failed/b-0000000002' };

describe('layout helpers', () => {
  test('job, claim and bucket paths', () => {
    assert.match(layout.job('7'), /^\/q\/jobs\/[0-9a-f]{2}\/7$/);
    assert.equal(layout.claim('7'), '/q/claims/7');
    assert.equal(layout.bucketOf('/q/ready/l', 12), '/q/ready/l/b-0000000012');
    assert.equal(layout.bucket(laneOf(5, false), 0), '/q/ready/p-0000000005/b-0000000000');
    assert.equal(layout.readyPointerPrefix(READY_BUCKET, 'a-b'), `${READY_BUCKET}/qn-a-b-`);
    assert.equal(layout.receipt('r-1'), '/q/receipts/r-1');
    assert.equal(layout.eventPrefix(), '/q/events/log/e-');
    assert.match(layout.dedupKey('user 1/a'), /^\/q\/dedup\/[0-9a-f]{2}\/d-user%201%2Fa$/);
    assert.equal(layout.dedupShard('x'), layout.dedupKey('x').slice(0, -4));
  });

  test('delayed day, hour and pointer names', () => {
    const day = Math.floor(DUE / 86_400_000);
    const hour = Math.floor(DUE / 3_600_000);
    assert.equal(layout.delayDay(DUE), `/q/delayed/d-${String(day).padStart(10, '0')}`);
    assert.equal(layout.delayHour(DUE), `${layout.delayDay(DUE)}/h-${String(hour).padStart(10, '0')}`);
    assert.equal(layout.delayHour(DUE + 3_600_000 - (DUE % 3_600_000) - 1), layout.delayHour(DUE));
    assert.notEqual(layout.delayHour(DUE + 3_600_000), layout.delayHour(DUE));
    assert.equal(layout.delayHour(-5), '/q/delayed/d-0000000000/h-0000000000');
    assert.equal(layout.delayedName(DUE, 'x-1'), `${String(DUE).padStart(13, '0')}-x-1`);
    assert.equal(layout.delayedName(12.7, 'j'), '0000000000012-j');
    assert.equal(layout.delayedName(-1, 'j'), '0000000000000-j');
  });

  test('finished pointer prefixes', () => {
    assert.equal(layout.finishedDir('completed'), '/q/completed');
    assert.equal(layout.finishedDir('failed'), '/q/failed');
    assert.equal(
      layout.finishedPointerPrefix('completed', '/q/completed/b-0000000001', 'j'),
      '/q/completed/b-0000000001/c-j-',
    );
    assert.equal(layout.finishedPointerPrefix('failed', '/q/failed/b-0000000001', 'j'), '/q/failed/b-0000000001/f-j-');
  });

  test('names parse back: ids (dashes included), due times, container numbers', () => {
    assert.equal(idOfPointer('qn-42-0000000007'), '42');
    assert.equal(idOfPointer('qn-order-42-x-0000000007'), 'order-42-x');
    assert.equal(idOfPointer('c-a-b-0000000000'), 'a-b');
    assert.equal(idOfPointer('f-z-0000012345'), 'z');
    const name = layout.delayedName(DUE, 'order-42');
    assert.equal(idOfDelayed(name), 'order-42');
    assert.equal(dueOfDelayed(name), DUE);
    assert.equal(numberOf('b-0000000012'), 12);
    assert.equal(numberOf('d-0000020000'), 20000);
    assert.equal(numberOf('h-0000480005'), 480005);
  });
});

describe('builders', () => {
  test('pointerOp: each destination kind, role into', () => {
    assert.deepEqual(pointerOp(layout, 'j', ready), {
      op: 'create',
      path: `${READY_BUCKET}/qn-j-`,
      mode: 'persistent_sequential',
      role: 'into',
    });
    assert.deepEqual(pointerOp(layout, 'j', delayed), {
      op: 'create',
      path: `${DELAYED_BUCKET}/${layout.delayedName(DUE, 'j')}`,
      role: 'into',
    });
    assert.deepEqual(pointerOp(layout, 'j', completed), {
      op: 'create',
      path: '/q/completed/b-0000000001/c-j-',
      mode: 'persistent_sequential',
      role: 'into',
    });
    assert.deepEqual(pointerOp(layout, 'j', failed), {
      op: 'create',
      path: '/q/failed/b-0000000002/f-j-',
      mode: 'persistent_sequential',
      role: 'into',
    });
  });

  test('enqueueOps: record create (no version, no role), then the pointer', () => {
    for (const to of [ready, delayed]) {
      assert.deepEqual(enqueueOps(layout, 'j', rec, to), [
        { op: 'create', path: layout.job('j'), data: rec },
        pointerOp(layout, 'j', to),
      ]);
    }
  });

  test('enqueueOps with a deduplication key: record, key, pointer', () => {
    const key = dedupKeyOp(layout, { id: 'd', data: rec });
    assert.deepEqual(enqueueOps(layout, 'j', rec, ready, key), [
      { op: 'create', path: layout.job('j'), data: rec },
      key,
      pointerOp(layout, 'j', ready),
    ]);
  });

  test('dedupKeyOp: create (role into) without a version, else the stale key rewritten at it', () => {
    assert.deepEqual(dedupKeyOp(layout, { id: 'd', data: rec }), {
      op: 'create',
      path: layout.dedupKey('d'),
      data: rec,
      role: 'into',
    });
    assert.deepEqual(dedupKeyOp(layout, { id: 'd', data: rec, version: 4 }), {
      op: 'setData',
      path: layout.dedupKey('d'),
      data: rec,
      version: 4,
    });
  });

  test('dedupDeleteOp: at the version read, or any', () => {
    assert.deepEqual(dedupDeleteOp(layout, { id: 'd', version: 2 }), {
      op: 'delete',
      path: layout.dedupKey('d'),
      version: 2,
    });
    assert.deepEqual(dedupDeleteOp(layout, { id: 'd' }), { op: 'delete', path: layout.dedupKey('d') });
  });

  test("parkOps: the key at the version read, then a check of the kept job's claim", () => {
    assert.deepEqual(parkOps(layout, { id: 'd', data: rec, version: 3, kept: 'k' }), [
      { op: 'setData', path: layout.dedupKey('d'), data: rec, version: 3 },
      { op: 'check', path: '/q/claims/k', version: -1 },
    ]);
  });

  const EMPTY = Buffer.alloc(0);

  test('claimOps: ephemeral claim create, then the ready pointer written blind (its version is the token); no record', () => {
    const pointer = `${READY_BUCKET}/qn-j-0000000004`;
    assert.deepEqual(claimOps(layout, { id: 'j', pointer, claim }), [
      { op: 'create', path: '/q/claims/j', data: claim, mode: 'ephemeral' },
      { op: 'setData', path: pointer, data: EMPTY, version: -1 },
    ]);
  });

  test('finishOps: pointer at the token, record at the version read, claim (role claim), new pointer (role into)', () => {
    const pointer = `${READY_BUCKET}/qn-j-0000000004`;
    const f = { id: 'j', token: 7, version: 2, pointer, record: rec, withClaim: true };
    for (const to of [ready, delayed, completed, failed]) {
      assert.deepEqual(finishOps(layout, f, to), [
        { op: 'delete', path: pointer, version: 7 },
        { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
        { op: 'delete', path: '/q/claims/j', role: 'claim' },
        pointerOp(layout, 'j', to),
      ]);
    }
    // given back in place: the pointer stays, written at the token (the attempt's lease ends with it)
    assert.deepEqual(finishOps(layout, { ...f, keepPointer: true }, undefined), [
      { op: 'setData', path: pointer, data: Buffer.alloc(0), version: 7 },
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      { op: 'delete', path: '/q/claims/j', role: 'claim' },
    ]);
  });

  test('finishOps: without the claim (only while none is there), and removing the job (record deleted, no new pointer)', () => {
    const pointer = `${READY_BUCKET}/qn-j-0000000004`;
    const f = { id: 'j', token: 7, version: 2, pointer };
    assert.deepEqual(finishOps(layout, { ...f, record: rec, withClaim: false }, completed), [
      { op: 'delete', path: pointer, version: 7 },
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      { op: 'create', path: '/q/claims/j', role: 'claim' },
      { op: 'delete', path: '/q/claims/j' },
      pointerOp(layout, 'j', completed),
    ]);
    assert.deepEqual(finishOps(layout, { ...f, record: undefined, withClaim: true }, undefined), [
      { op: 'delete', path: pointer, version: 7 },
      { op: 'delete', path: layout.job('j'), version: 2 },
      { op: 'delete', path: '/q/claims/j', role: 'claim' },
    ]);
    assert.deepEqual(finishOps(layout, { ...f, record: undefined, withClaim: false }, undefined), [
      { op: 'delete', path: pointer, version: 7 },
      { op: 'delete', path: layout.job('j'), version: 2 },
      { op: 'create', path: '/q/claims/j', role: 'claim' },
      { op: 'delete', path: '/q/claims/j' },
    ]);
  });

  test("renewOps and reclaimOps: the attempt's ready pointer at the token, then the claim (role claim)", () => {
    const pointer = '/q/ready/p-0000000000/b-0000000000/qn-j-0000000007';
    const r = { id: 'j', token: 3, pointer, claim };
    assert.deepEqual(renewOps(layout, r), [
      { op: 'check', path: pointer, version: 3 },
      { op: 'setData', path: '/q/claims/j', data: claim, role: 'claim' },
    ]);
    assert.deepEqual(reclaimOps(layout, r), [
      { op: 'check', path: pointer, version: 3 },
      { op: 'create', path: '/q/claims/j', data: claim, mode: 'ephemeral', role: 'claim' },
    ]);
  });

  test('revokeOps: claim deleted at the version judged stale, the pointer written at the token, the record at its version', () => {
    const r = { id: 'j', claimVersion: 11, pointer: '/q/p', token: 4, record: rec, recordVersion: 1 };
    assert.deepEqual(revokeOps(layout, r), [
      { op: 'delete', path: '/q/claims/j', version: 11 },
      { op: 'setData', path: '/q/p', data: EMPTY, version: 4 },
      { op: 'setData', path: layout.job('j'), data: rec, version: 1 },
    ]);
  });

  test('claimOps with a slot: the slot created last (ephemeral), so claim and slot commit together', () => {
    const pointer = `${READY_BUCKET}/qn-j-0000000004`;
    assert.deepEqual(claimOps(layout, { id: 'j', pointer, claim, slot: 's-2' }), [
      { op: 'create', path: '/q/claims/j', data: claim, mode: 'ephemeral' },
      { op: 'setData', path: pointer, data: EMPTY, version: -1 },
      { op: 'create', path: '/q/slots/s-2', mode: 'ephemeral' },
    ]);
  });

  test('finishOps with a slot: deleted right after the claim, and only with it', () => {
    const pointer = `${READY_BUCKET}/qn-j-0000000004`;
    const f = { id: 'j', token: 7, version: 2, pointer, record: rec, withClaim: true, slot: 's-0' };
    assert.deepEqual(finishOps(layout, f, completed), [
      { op: 'delete', path: pointer, version: 7 },
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      { op: 'delete', path: '/q/claims/j', role: 'claim' },
      { op: 'delete', path: '/q/slots/s-0' },
      pointerOp(layout, 'j', completed),
    ]);
    // the claim vanished with its session, the slot with it: another attempt may hold that name now
    assert.deepEqual(finishOps(layout, { ...f, withClaim: false }, completed), [
      { op: 'delete', path: pointer, version: 7 },
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      { op: 'create', path: '/q/claims/j', role: 'claim' },
      { op: 'delete', path: '/q/claims/j' },
      pointerOp(layout, 'j', completed),
    ]);
  });

  test('reclaimOps, revokeOps and releaseOps carry the slot after the claim', () => {
    assert.deepEqual(reclaimOps(layout, { id: 'j', token: 3, pointer: '/q/p', claim, slot: 's-1' }), [
      { op: 'check', path: '/q/p', version: 3 },
      { op: 'create', path: '/q/claims/j', data: claim, mode: 'ephemeral', role: 'claim' },
      { op: 'create', path: '/q/slots/s-1', mode: 'ephemeral' },
    ]);
    const r = { id: 'j', claimVersion: 11, pointer: '/q/p', token: 4, record: rec, recordVersion: 1, slot: 's-1' };
    assert.deepEqual(revokeOps(layout, r), [
      { op: 'delete', path: '/q/claims/j', version: 11 },
      { op: 'setData', path: '/q/p', data: EMPTY, version: 4 },
      { op: 'setData', path: layout.job('j'), data: rec, version: 1 },
      { op: 'delete', path: '/q/slots/s-1' },
    ]);
    assert.deepEqual(releaseOps(layout, { id: 'j', claimVersion: 2, slot: 's-1' }), [
      { op: 'delete', path: '/q/claims/j', version: 2 },
      { op: 'delete', path: '/q/slots/s-1' },
    ]);
    assert.deepEqual(releaseOps(layout, { id: 'j', claimVersion: 2 }), [
      { op: 'delete', path: '/q/claims/j', version: 2 },
    ]);
  });

  test('windowOps: never a delete (versions never repeat); count checks the window, reopen rewrites it', () => {
    const window = Buffer.from('{"ms":1000,"id":"w"}');
    const count = Buffer.from('{"count":2}');
    assert.deepEqual(windowOps(layout, { kind: 'open', window, count }), [
      { op: 'create', path: '/q/limiter', data: window },
      { op: 'create', path: '/q/limiter/count', data: count },
    ]);
    assert.deepEqual(windowOps(layout, { kind: 'count', version: 4, countVersion: 9, count }), [
      { op: 'check', path: '/q/limiter', version: 4 },
      { op: 'setData', path: '/q/limiter/count', data: count, version: 9 },
    ]);
    assert.deepEqual(windowOps(layout, { kind: 'reopen', version: 4, countVersion: 9, window, count }), [
      { op: 'setData', path: '/q/limiter', data: window, version: 4 },
      { op: 'setData', path: '/q/limiter/count', data: count, version: 9 },
    ]);
    assert.deepEqual(windowOps(layout, { kind: 'set', window, count }), [
      { op: 'setData', path: '/q/limiter', data: window },
      { op: 'setData', path: '/q/limiter/count', data: count },
    ]);
    assert.deepEqual(settingsCheckOp(layout, 9), { op: 'check', path: '/q/settings', version: 9 });
    // a limited claim tells a pause met on the way by this path (limited-claims.ts, Group.conflict)
    assert.deepEqual(pauseCheckOp(layout, 4), { op: 'check', path: '/q/meta', version: 4 });
  });

  test('orphanPointerOps: the record created and deleted (a check of its absence), then the pointer', () => {
    const pointer = `${layout.bucket(PLAIN_LANE, 0)}/qn-j-0000000003`;
    // dropOrphanPointer reads NodeExists (the create, first) as "the id has a record: work"
    assert.deepEqual(orphanPointerOps(layout, { id: 'j', pointer }), [
      { op: 'create', path: layout.job('j') },
      { op: 'delete', path: layout.job('j') },
      { op: 'delete', path: pointer },
    ]);
    // left beside a record no ready pointer goes with: only while the record is at the version read
    assert.deepEqual(orphanPointerOps(layout, { id: 'j', pointer }, 4), [
      { op: 'check', path: layout.job('j'), version: 4 },
      { op: 'delete', path: pointer },
    ]);
  });

  test('moveOps: record at the version read, old pointer (when any), new pointer', () => {
    const from = `${DELAYED_BUCKET}/${layout.delayedName(DUE, 'j')}`;
    assert.deepEqual(moveOps(layout, { id: 'j', version: 2, record: rec, from }, ready), [
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      { op: 'delete', path: from },
      pointerOp(layout, 'j', ready),
    ]);
    assert.deepEqual(moveOps(layout, { id: 'j', version: 2, record: rec, from: undefined }, failed), [
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      pointerOp(layout, 'j', failed),
    ]);
    // out of a ready lane: only while no claim is there (a claim writes no record to fence it by)
    const waiting = `${READY_BUCKET}/qn-j-0000000004`;
    assert.deepEqual(moveOps(layout, { id: 'j', version: 2, record: rec, from: waiting }, delayed), [
      { op: 'setData', path: layout.job('j'), data: rec, version: 2 },
      { op: 'create', path: '/q/claims/j' },
      { op: 'delete', path: '/q/claims/j' },
      { op: 'delete', path: waiting },
      pointerOp(layout, 'j', delayed),
    ]);
  });

  test('rewriteOps: the record at the version read, only while no claim is there', () => {
    assert.deepEqual(rewriteOps(layout, { id: 'j', version: 3, record: rec }), [
      { op: 'setData', path: layout.job('j'), data: rec, version: 3 },
      { op: 'create', path: '/q/claims/j' },
      { op: 'delete', path: '/q/claims/j' },
    ]);
  });

  test('removeOps: record at the version read (when readable), then the pointer (when any; a ready one while unclaimed)', () => {
    const pointer = `${READY_BUCKET}/qn-j-0000000004`;
    const unclaimed = [
      { op: 'create', path: '/q/claims/j' },
      { op: 'delete', path: '/q/claims/j' },
    ];
    assert.deepEqual(removeOps(layout, { id: 'j', version: 5, pointer }), [
      { op: 'delete', path: layout.job('j'), version: 5 },
      ...unclaimed,
      { op: 'delete', path: pointer },
    ]);
    assert.deepEqual(removeOps(layout, { id: 'j', version: 0, pointer: undefined }), [
      { op: 'delete', path: layout.job('j'), version: 0 },
    ]);
    assert.deepEqual(removeOps(layout, { id: 'j', version: undefined, pointer }), [
      ...unclaimed,
      { op: 'delete', path: pointer },
    ]);
    const delayedPointer = `${DELAYED_BUCKET}/${layout.delayedName(DUE, 'j')}`;
    assert.deepEqual(removeOps(layout, { id: 'j', version: 5, pointer: delayedPointer }), [
      { op: 'delete', path: layout.job('j'), version: 5 },
      { op: 'delete', path: delayedPointer },
    ]);
  });

  test('fillOp: a grow writes the set node at the version read, a check checks it (role trim); a touch writes it', () => {
    const empty = Buffer.alloc(0);
    assert.deepEqual(fillOp(layout, 'completed', { kind: 'grow', version: 4 }), {
      op: 'setData',
      path: layout.completedDir,
      data: empty,
      version: 4,
      role: 'trim',
    });
    assert.deepEqual(fillOp(layout, 'failed', { kind: 'check', version: 2 }), {
      op: 'check',
      path: layout.failedDir,
      version: 2,
      role: 'trim',
    });
    assert.deepEqual(fillOp(layout, 'completed', { kind: 'touch' }), {
      op: 'setData',
      path: layout.completedDir,
      data: empty,
    });
  });

  test('trimOps: the finished pointer first (it fences the record), then the record', () => {
    const pointer = '/q/completed/b-0000000000/c-j-0000000009';
    assert.deepEqual(trimOps(layout, { id: 'j', pointer }), [
      { op: 'delete', path: pointer },
      { op: 'delete', path: layout.job('j') },
    ]);
  });
});

describe('lanes', () => {
  test('waitingStateOf: lifo and plain lanes wait, real priorities are prioritized', () => {
    assert.equal(waitingStateOf(undefined), 'waiting');
    assert.equal(waitingStateOf(PLAIN_LANE), 'waiting');
    assert.equal(waitingStateOf(laneOf(0, false)), 'waiting');
    assert.equal(waitingStateOf(LIFO_LANE), 'waiting');
    assert.equal(waitingStateOf(laneOf(0, true)), 'waiting');
    assert.equal(waitingStateOf(laneOf(1, false)), 'prioritized');
    assert.equal(waitingStateOf(laneOf(2_097_152, false)), 'prioritized');
  });

  test('sortLanes: lifo first, then by priority (0 first), input untouched', () => {
    const lanes = [laneOf(10, false), laneOf(2, false), LIFO_LANE, laneOf(0, false), laneOf(100, false)];
    const copy = lanes.slice();
    assert.deepEqual(sortLanes(lanes), [
      LIFO_LANE,
      laneOf(0, false),
      laneOf(2, false),
      laneOf(10, false),
      laneOf(100, false),
    ]);
    assert.deepEqual(lanes, copy);
    assert.deepEqual(sortLanes([laneOf(1, false), LIFO_LANE]), [LIFO_LANE, laneOf(1, false)]);
  });
});

// ---- plans ------------------------------------------------------------------

const NOW = 1_900_000_000_000;

function record(over: Partial<JobRecord> = {}): JobRecord {
  return {
    v: 1,
    id: 'j',
    name: 'n',
    data: {},
    opts: {},
    progress: 0,
    attemptsMade: 1,
    attemptsStarted: 2,
    stalledCounter: 0,
    timestamp: NOW - 10_000,
    delay: 0,
    priority: 0,
    stacktrace: ['old'],
    processedOn: NOW - 100,
    state: 'active',
    ...over,
  };
}

function finish(outcome: Finish['outcome'], over: Partial<JobRecord> = {}, extra: Partial<Finish> = {}): Finish {
  return {
    job: {
      record: record(over),
      token: 3,
      version: 1,
      pointerCzxid: 5,
      pointer: `${READY_BUCKET}/qn-j-0000000000`,
      claimedAt: 0,
      stalled: false,
      czxid: 1,
    },
    outcome,
    ...extra,
  };
}

describe('planFinish', () => {
  afterEach(() => mock.restoreAll());
  const clock = () => mock.method(Date, 'now', () => NOW);

  test('completed: record completed, finished pointer, completed event', () => {
    clock();
    const plan = planFinish(finish({ kind: 'completed', returnvalue: { r: 1 }, remove: false }));
    assert.deepEqual(plan.to, { kind: 'completed' });
    assert.deepEqual(plan.record, {
      ...record(),
      state: 'completed',
      returnvalue: { r: 1 },
      attemptsMade: 2,
      finishedOn: NOW,
    });
    assert.deepEqual(plan.event, { event: 'completed', jobId: 'j', returnvalue: { r: 1 }, prev: 'active', ts: NOW });
  });

  test('completed with remove: no record, no place, the event still', () => {
    clock();
    const plan = planFinish(finish({ kind: 'completed', returnvalue: 5, remove: true }));
    assert.equal(plan.record, undefined);
    assert.equal(plan.to, undefined);
    assert.deepEqual(plan.event, { event: 'completed', jobId: 'j', returnvalue: 5, prev: 'active', ts: NOW });
  });

  test('failed: reason, new stack lines first, failed place and event', () => {
    clock();
    const plan = planFinish(finish({ kind: 'failed', reason: 'boom', stacktrace: ['new'], remove: false }));
    assert.deepEqual(plan.to, { kind: 'failed' });
    assert.deepEqual(plan.record, {
      ...record(),
      state: 'failed',
      failedReason: 'boom',
      stacktrace: ['new', 'old'],
      attemptsMade: 2,
      finishedOn: NOW,
    });
    assert.deepEqual(plan.event, { event: 'failed', jobId: 'j', failedReason: 'boom', prev: 'active', ts: NOW });
    // attemptsMade 2 of the default 1 attempt: the retries are exhausted (BullMQ's event)
    assert.deepEqual(plan.also, [{ event: 'retries-exhausted', jobId: 'j', attemptsMade: 2, ts: NOW }]);
  });

  test('failed before the last attempt (a caller that retries no more): no retries-exhausted', () => {
    clock();
    const plan = planFinish(
      finish({ kind: 'failed', reason: 'boom', stacktrace: [], remove: false }, { opts: { attempts: 5 } }),
    );
    assert.deepEqual(plan.also, []);
  });

  test('failed with remove: no record, no place, the event still', () => {
    clock();
    const plan = planFinish(finish({ kind: 'failed', reason: 'boom', stacktrace: [], remove: true }));
    assert.equal(plan.record, undefined);
    assert.equal(plan.to, undefined);
    assert.equal(plan.event.event, 'failed');
  });

  test('retry due later: delayed record and place, not finished, delayed event', () => {
    clock();
    const due = NOW + 5000;
    const plan = planFinish(
      finish({ kind: 'retry', reason: 'again', stacktrace: ['s'], due }, { lane: 'p-0000000004' }),
    );
    assert.deepEqual(plan.to, { kind: 'delayed', due });
    assert.equal(plan.record?.state, 'delayed');
    assert.equal(plan.record?.due, due);
    assert.equal(plan.record?.finishedOn, undefined);
    assert.equal(plan.record?.attemptsMade, 2);
    assert.equal(plan.record?.failedReason, 'again');
    assert.deepEqual(plan.record?.stacktrace, ['s', 'old']);
    assert.deepEqual(plan.event, { event: 'delayed', jobId: 'j', delay: due, ts: NOW });
  });

  test('retry due at a time already past: still delayed (the leader promotes it on ZooKeeper’s clock)', () => {
    clock();
    const plan = planFinish(finish({ kind: 'retry', reason: 'again', stacktrace: [], due: NOW - 10 }));
    assert.deepEqual(plan.to, { kind: 'delayed', due: NOW - 10 });
  });

  test('retry now (due 0): waiting in the record lane (plain lane when none), waiting event from active', () => {
    clock();
    for (const [lane, expected] of [
      ['p-0000000004', 'p-0000000004'],
      [LIFO_LANE, LIFO_LANE],
      [undefined, PLAIN_LANE],
    ] as const) {
      const over = lane === undefined ? {} : { lane };
      const plan = planFinish(finish({ kind: 'retry', reason: 'again', stacktrace: [], due: 0 }, over));
      assert.deepEqual(plan.to, { kind: 'ready', lane: expected });
      assert.equal(plan.record?.state, 'waiting');
      assert.equal(plan.record?.finishedOn, undefined);
      assert.equal(plan.record?.attemptsMade, 2);
      assert.deepEqual(plan.event, { event: 'waiting', jobId: 'j', prev: 'active', ts: NOW });
    }
  });

  test('logs never go into the record (they live apart); a legacy record keeps its own; progress stored', () => {
    clock();
    const outcome = { kind: 'completed', returnvalue: null, remove: false } as const;
    const planned = planFinish(finish(outcome, { opts: { keepLogs: 3 } }, { logs: ['c', 'd'], progress: 50 }));
    assert.equal(planned.record?.logs, undefined);
    assert.equal(planned.record?.progress, 50);
    const legacy = planFinish(finish(outcome, { logs: ['a'] }, { logs: ['b'] }));
    assert.deepEqual(legacy.record?.logs, ['a']);
  });

  test('stack traces bounded by stackTraceLimit (default 10, at least 1)', () => {
    clock();
    const old = Array.from({ length: 12 }, (_, i) => `old${i}`);
    const fail = (limit: number | undefined) =>
      planFinish(
        finish(
          { kind: 'failed', reason: 'r', stacktrace: ['new'], remove: false },
          { stacktrace: old, opts: limit === undefined ? {} : { stackTraceLimit: limit } },
        ),
      ).record?.stacktrace;
    assert.deepEqual(fail(undefined), ['new', ...old.slice(0, 9)]);
    assert.deepEqual(fail(2), ['new', 'old0']);
    assert.deepEqual(fail(0), ['new']);
  });
});

describe('promotedRecord', () => {
  test('a promotion, due or by hand: waiting, due and delay cleared (as BullMQ does)', () => {
    const r = promotedRecord(record({ state: 'delayed', due: NOW, delay: 5000 }));
    assert.equal(r.state, 'waiting');
    assert.equal(r.due, undefined);
    assert.equal(r.delay, 0);
  });
});
