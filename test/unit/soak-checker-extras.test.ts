/**
 * The soak's checks of its extras queue (test/soak/extras-checker.ts), fed
 * hand-made histories: a clean one, then one per violation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkHistory, type ViolationKind } from '../soak/checker.js';
import { bigErrorHead, LOG_LINE_BYTES, logLine } from '../soak/extra-attempt.js';
import { emptyExtras } from '../soak/extras.js';
import { rateLimitFeasible } from '../soak/extras-checker.js';
import type { EnqueueEvent, ExtrasHistory, FinalJob, SoakHistory, WorkerEvent } from '../soak/history.js';

const Q = 'extra';

function history(extras: Partial<ExtrasHistory>, h: Partial<SoakHistory> = {}): SoakHistory {
  return {
    enqueues: [],
    unacked: [],
    readds: [],
    flows: [],
    workers: [],
    faults: [],
    finals: [],
    fifoQueues: [],
    ...h,
    extras: { ...emptyExtras(), ...extras },
  };
}

function enqueue(id: string, seq: number, extra: Partial<EnqueueEvent> = {}): EnqueueEvent {
  return {
    k: 'enqueue',
    q: Q,
    id,
    seq,
    priority: 0,
    delay: 0,
    attempts: 1,
    custom: false,
    hash: '',
    bytes: 1,
    ts: 1000,
    ...extra,
  };
}

function final(id: string, seq: number, state: string, extra: Partial<FinalJob> = {}): FinalJob {
  return { q: Q, id, state, name: `j${seq}`, finishedOn: 5000, listed: [state], ...extra };
}

const start = (j: string, t: string, ts: number, w = 'w1'): WorkerEvent => ({ k: 'start', q: Q, j, w, t, n: 1, ts });
const failedAck = (j: string, t: string, ts: number): WorkerEvent => ({
  k: 'failed',
  q: Q,
  j,
  w: 'w1',
  t,
  reason: 'r',
  attemptsMade: 1,
  ts,
});

function kinds(h: SoakHistory): ViolationKind[] {
  return checkHistory(h).violations.map((v) => v.kind);
}

const bigReason = (id: string) => `${bigErrorHead(id)}1: ${'y'.repeat(16_000)}…[truncated 284000 bytes]`;

test('extras: a clean history has no violation', () => {
  const h = history(
    {
      jobs: { '1': { x: 'big-error' }, '2': { x: 'too-large' }, '3': { x: 'logs', keepLogs: 50, lines: 100 } },
      schedulers: [{ k: 'scheduler', id: 's0', every: 2000, upserted: 1000, removed: 7000 }],
    },
    {
      enqueues: [enqueue('1', 1), enqueue('2', 2, { attempts: 3 }), enqueue('3', 3)],
      workers: [start('1', '1', 1100), failedAck('1', '1', 1200), start('2', '1', 1100), failedAck('2', '1', 1200)],
      finals: [
        final('1', 1, 'failed', { failedReason: bigReason('1') }),
        final('2', 2, 'failed', { failedReason: 'PayloadTooLargeError: result too large to store (x)' }),
        final('3', 3, 'completed', {
          returnvalue: { w: 'w1', t: '7', n: 1, h: '' },
          logs: Array.from({ length: 50 }, (_, i) => logLine('7', 50 + i)),
        }),
        ...[1000, 3000, 5000].map((at) => final(`repeat:s0:${at}`, 0, 'completed', { name: 'tick-s0' })),
      ],
    },
  );
  const { violations } = checkHistory(h);
  assert.deepEqual(
    violations.filter((v) => v.q === Q && !['completed-without-run', 'result-mismatch'].includes(v.kind)),
    [],
  );
});

test('extras: an oversized error not cut, or ending otherwise than failed with it', () => {
  const base = { jobs: { '1': { x: 'big-error' as const } } };
  const e = { enqueues: [enqueue('1', 1)] };
  assert.deepEqual(
    kinds(
      history(base, {
        ...e,
        finals: [final('1', 1, 'failed', { failedReason: 'job stalled more than allowable limit' })],
      }),
    ),
    ['oversized-error-not-failed'],
  );
  const whole = `${bigErrorHead('1')}1: ${'y'.repeat(300_000)}`;
  assert.deepEqual(kinds(history(base, { ...e, finals: [final('1', 1, 'failed', { failedReason: whole })] })), [
    'oversized-error-not-failed',
  ]);
});

test('extras: a result too large must fail the job after one finish, and nothing runs after it', () => {
  const base = { jobs: { '2': { x: 'too-large' as const } } };
  const reason = 'PayloadTooLargeError: result too large to store (x)';
  const e = { enqueues: [enqueue('2', 2, { attempts: 3 })] };
  const retried = history(base, {
    ...e,
    workers: [start('2', '1', 1100), failedAck('2', '1', 1200), start('2', '2', 1500), failedAck('2', '2', 1600)],
    finals: [final('2', 2, 'failed', { failedReason: reason })],
  });
  assert.deepEqual(kinds(retried), ['too-large-not-failed-once']);
  const stuck = history(base, {
    ...e,
    finals: [final('2', 2, 'failed', { failedReason: 'job stalled more than allowable limit' })],
  });
  assert.deepEqual(kinds(stuck), ['too-large-not-failed-once']);
});

test('extras: logs over keepLogs, cut, or not ending with the finishing attempt', () => {
  const jobs = { '3': { x: 'logs' as const, keepLogs: 50, lines: 100 } };
  const done = { returnvalue: { w: 'w1', t: '7', n: 1, h: '' } };
  const check = (logs: string[]) => {
    const h = history(
      { jobs },
      { enqueues: [enqueue('3', 3)], finals: [final('3', 3, 'completed', { ...done, logs })] },
    );
    return [...new Set(kinds(h).filter((k) => k === 'logs-wrong'))];
  };
  const tail = Array.from({ length: 50 }, (_, i) => logLine('7', 50 + i));
  assert.deepEqual(check(tail), []);
  assert.deepEqual(check([logLine('7', 49), ...tail]), ['logs-wrong']);
  assert.deepEqual(check([...tail.slice(0, 49), 'x'.repeat(LOG_LINE_BYTES)]), ['logs-wrong']);
  assert.deepEqual(check(Array.from({ length: 50 }, (_, i) => logLine('3', 50 + i))), ['logs-wrong']);
});

test("extras: logs named by a layout-3 token (the pointer's czxid in base 36, a dot, its version) are the processor's", () => {
  const jobs = { '3': { x: 'logs' as const, keepLogs: 50, lines: 100 } };
  const done = { returnvalue: { w: 'w1', t: 'k3.2', n: 1, h: '' } };
  const h = history(
    { jobs },
    {
      enqueues: [enqueue('3', 3)],
      finals: [
        final('3', 3, 'completed', { ...done, logs: Array.from({ length: 50 }, (_, i) => logLine('k3.2', 50 + i)) }),
      ],
    },
  );
  assert.deepEqual(
    kinds(h).filter((k) => k === 'logs-wrong'),
    [],
  );
});

test('extras: a deduplicated add must return a live job of its id; no second job while one is kept', () => {
  const add = (seq: number, id: string, own: boolean, sent: number, ttl?: number) => ({
    k: 'dedup-add' as const,
    q: Q,
    dedup: 'd0',
    seq,
    id,
    own,
    sent,
    ts: sent + 10,
    ...(ttl ? { ttl } : {}),
  });
  const finals = [final('1', 1, 'completed', { finishedOn: 3000 }), final('2', 2, 'completed', { finishedOn: 9000 })];
  const ok = history(
    { dedupAdds: [add(1, '1', true, 1000), add(9, '1', false, 2000), add(2, '2', true, 4000)] },
    { finals },
  );
  assert.deepEqual(
    kinds(ok).filter((k) => k.startsWith('dedup')),
    [],
  );
  const stale = history({ dedupAdds: [add(1, '1', true, 1000), add(9, '1', false, 5000)] }, { finals });
  assert.deepEqual(
    kinds(stale).filter((k) => k.startsWith('dedup')),
    ['dedup-not-live'],
  );
  const twice = history({ dedupAdds: [add(1, '1', true, 1000), add(2, '2', true, 2000)] }, { finals });
  assert.deepEqual(
    kinds(twice).filter((k) => k.startsWith('dedup')),
    ['dedup-duplicate'],
  );
  const ttl = history({ dedupAdds: [add(1, '1', true, 1000, 3000), add(2, '2', true, 2000, 3000)] }, { finals });
  assert.deepEqual(
    kinds(ttl).filter((k) => k.startsWith('dedup')),
    ['dedup-duplicate'],
  );
  const left = history({ dedupKeys: [{ dedup: 'd0', exists: true, live: null }] });
  assert.deepEqual(kinds(left), ['dedup-key-left']);
  const ttlLeft = history({ dedupKeys: [{ dedup: 'd1', ttl: 1000, exists: true, live: null }] });
  assert.deepEqual(kinds(ttlLeft), []);
});

test('extras: a scheduler that stops ticking, or ticks twice for one time', () => {
  const s = { k: 'scheduler' as const, id: 's0', every: 2000, upserted: 1000, removed: 40_000 };
  const ticks = (ats: number[]) => ats.map((at) => final(`repeat:s0:${at}`, 0, 'completed', { name: 'tick-s0' }));
  const gap = history({ schedulers: [s] }, { finals: ticks([1000, 3000, 21_000, 23_000, 39_000]) });
  assert.deepEqual(
    kinds(gap).filter((k) => k.startsWith('scheduler')),
    ['scheduler-gap', 'scheduler-gap'],
  );
  const double = history({ schedulers: [{ ...s, removed: 8000 }] }, { finals: ticks([1000, 3000, 3200, 5000, 7000]) });
  assert.deepEqual(
    kinds(double).filter((k) => k.startsWith('scheduler')),
    ['scheduler-double-tick'],
  );
});

test('extras: the rate limit is judged by claims on ZooKeeper time, a late claim counted in the window it was decided in', () => {
  // max 1 per 1000: a claim at 1001 committed late in the first window, the second opens at 1002
  assert.equal(rateLimitFeasible([0, 1001, 1002], 2, 1000), undefined);
  assert.equal(rateLimitFeasible([0, 1000, 2000, 3000], 1, 1000), undefined);
  assert.equal(rateLimitFeasible([0, 500, 999], 2, 1000), 999);
  assert.equal(rateLimitFeasible([0, 1001, 1002, 1500], 2, 1000), undefined);
  assert.equal(rateLimitFeasible([0, 1001, 1002, 1500, 1600], 2, 1000), 1600);
  const claim = (j: string, ctime: number): WorkerEvent => ({ k: 'claim', q: Q, j, w: 'w1', t: '1', ctime, ts: ctime });
  const over = history(
    { limit: { max: 2, duration: 1000 } },
    { workers: [claim('a', 0), claim('b', 10), claim('c', 20)] },
  );
  assert.deepEqual(kinds(over), ['rate-limit-exceeded']);
});

test('extras: a due job first started later than the bound past its due time, widened by a ZooKeeper restart', () => {
  const late = (faults: SoakHistory['faults']) =>
    kinds(
      history(
        {},
        {
          enqueues: [enqueue('5', 5, { delay: 1000, ts: 1000 })],
          workers: [start('5', '1', 2000 + 11_000)],
          finals: [final('5', 5, 'failed', { failedReason: 'x', finishedOn: 20_000 })],
          faults,
        },
      ),
    );
  assert.deepEqual(late([]), ['late-promotion']);
  assert.deepEqual(late([{ k: 'fault', kind: 'restart', target: 'zookeeper', ts: 3000, ms: 2000 }]), []);
  assert.deepEqual(late([{ k: 'fault', kind: 'kill', target: 'w1', ts: 3000, ms: 2000 }]), ['late-promotion']);
});

test('extras: a failed job whose workers logged out of time order is judged by time', () => {
  const jobs = { '3': { x: 'logs' as const, keepLogs: 50, lines: 10 } };
  const logs = [
    ...Array.from({ length: 10 }, (_, i) => logLine('1', i)),
    ...Array.from({ length: 10 }, (_, i) => logLine('4', i)),
  ];
  const h = history(
    { jobs },
    {
      enqueues: [enqueue('3', 3, { attempts: 2 })],
      // w2's file is read before w3's: the later attempt's events come first
      workers: [
        start('3', '4', 2000, 'w2'),
        { ...failedAck('3', '4', 2100), w: 'w2' },
        start('3', '1', 1000, 'w3'),
        { ...failedAck('3', '1', 1100), w: 'w3' },
      ],
      finals: [final('3', 3, 'failed', { failedReason: 'planned', logs })],
    },
  );
  assert.deepEqual(kinds(h), []);
});

test("extras: a revoked attempt's lines may follow the finishing attempt's, and the byte bound may cut them", () => {
  const jobs = { '3': { x: 'logs' as const, keepLogs: 1000, lines: 500 } };
  const done = { returnvalue: { w: 'w1', t: '3', n: 2, h: '' } };
  // 786 lines of 1,000 B fill the 768 KiB: 286 of the finisher's (3), then all of the revoked attempt's (1)
  const logs = [
    ...Array.from({ length: 286 }, (_, i) => logLine('3', 214 + i)),
    ...Array.from({ length: 500 }, (_, i) => logLine('1', i)),
  ];
  const lost: WorkerEvent = { k: 'lost', q: Q, j: '3', w: 'w2', t: '1', err: 'revoked', ts: 3000 };
  const judge = (workers: WorkerEvent[]) =>
    kinds(
      history(
        { jobs },
        { enqueues: [enqueue('3', 3)], workers, finals: [final('3', 3, 'completed', { ...done, logs })] },
      ),
    ).filter((k) => k === 'logs-wrong');
  assert.deepEqual(judge([lost]), []);
  assert.deepEqual(judge([]), ['logs-wrong']);
});

test("extras: a revoked attempt logging after the finish may push all of the finisher's lines out of a full log", () => {
  const jobs = { '3': { x: 'logs' as const, keepLogs: 50, lines: 530 } };
  const done = { returnvalue: { w: 'w1', t: '3', n: 2, h: '' } };
  // the revoked attempt (1) flushed its 530 lines after the finisher (3): the last 50 are all its own
  const pushed = Array.from({ length: 50 }, (_, i) => logLine('1', 480 + i));
  const lost: WorkerEvent = { k: 'lost', q: Q, j: '3', w: 'w2', t: '1', err: 'revoked', ts: 3000 };
  const judge = (workers: WorkerEvent[], logs: string[]) =>
    kinds(
      history(
        { jobs },
        { enqueues: [enqueue('3', 3)], workers, finals: [final('3', 3, 'completed', { ...done, logs })] },
      ),
    ).filter((k) => k === 'logs-wrong');
  assert.deepEqual(judge([lost], pushed), []);
  // not revoked: an attempt that did not finish the job left the only lines
  assert.deepEqual(judge([], pushed), ['logs-wrong']);
  // not full: the finisher's lines were lost, not pushed out
  assert.deepEqual(judge([lost], pushed.slice(10)), ['logs-wrong']);
});
