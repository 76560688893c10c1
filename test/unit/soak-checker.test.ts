import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkHistory, type ViolationKind } from '../soak/checker.js';
import type { EnqueueEvent, FinalJob, SoakHistory, SoakResult, WorkerEvent } from '../soak/history.js';
import { formatReport } from '../soak/report.js';

const Q = 'q';

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
    hash: `h${seq}`,
    bytes: 1,
    ts: 1000,
    ...extra,
  };
}

const result = (w: string, t: string, n: number, h: string): SoakResult => ({ w, t, n, h });

/** One attempt: start, then the processor returns (or throws), then optionally the completion is acknowledged. */
function attempt(
  j: string,
  w: string,
  t: string,
  n: number,
  ts: number,
  outcome: { returns?: SoakResult; throws?: string; acked?: boolean } = {},
): WorkerEvent[] {
  const out: WorkerEvent[] = [{ k: 'start', q: Q, j, w, t, n, ts }];
  if (outcome.returns) out.push({ k: 'end', q: Q, j, w, t, ok: true, v: outcome.returns, ts: ts + 10 });
  if (outcome.throws) out.push({ k: 'end', q: Q, j, w, t, ok: false, err: outcome.throws, ts: ts + 10 });
  if (outcome.acked) out.push({ k: 'completed', q: Q, j, w, t, ts: ts + 20 });
  return out;
}

function completed(
  id: string,
  seq: number,
  v: SoakResult,
  finishedOn: number,
  extra: Partial<FinalJob> = {},
): FinalJob {
  return {
    q: Q,
    id,
    state: 'completed',
    name: `j${seq}`,
    returnvalue: v,
    finishedOn,
    hash: `h${seq}`,
    listed: ['completed'],
    ...extra,
  };
}

function history(parts: Partial<SoakHistory>): SoakHistory {
  return {
    enqueues: [],
    unacked: [],
    readds: [],
    flows: [],
    workers: [],
    faults: [],
    finals: [],
    fifoQueues: [],
    ...parts,
  };
}

/** One healthy completed job `1`: the base the violation tests change one thing of. */
function healthy(): SoakHistory {
  const v = result('w1', '1', 1, 'h1');
  return history({
    enqueues: [enqueue('1', 1)],
    workers: attempt('1', 'w1', '1', 1, 2000, { returns: v, acked: true }),
    finals: [completed('1', 1, v, 2030)],
  });
}

function kinds(h: SoakHistory): ViolationKind[] {
  return checkHistory(h).violations.map((v) => v.kind);
}

test('soak checker: a history with retries, a revoked attempt and an unacknowledged enqueue passes', () => {
  const done = result('w2', '5', 2, 'h1');
  const h = history({
    enqueues: [enqueue('1', 1, { attempts: 2 }), enqueue('2', 2, { attempts: 2 })],
    unacked: [{ k: 'enqueue-unacked', q: Q, seqs: [3, 4], hashes: ['h3', 'h4'], error: 'connection lost', ts: 1100 }],
    workers: [
      // job 1: attempt #1 revoked (lost) while running; #2 claimed elsewhere completes.
      ...attempt('1', 'w1', '2', 1, 2000, { returns: result('w1', '2', 1, 'h1') }),
      { k: 'stalled', q: Q, j: '1', w: 'w3', ts: 2500 },
      ...attempt('1', 'w2', '5', 2, 2600, { returns: done, acked: true }),
      { k: 'lost', q: Q, j: '1', w: 'w1', t: '2', err: 'no longer owned', ts: 2700 },
      // job 2: fails twice, ends failed with a reason.
      ...attempt('2', 'w1', '1', 1, 2000, { throws: 'boom' }),
      { k: 'failed', q: Q, j: '2', w: 'w1', t: '1', reason: 'boom', attemptsMade: 1, ts: 2020 },
      ...attempt('2', 'w1', '3', 2, 2400, { throws: 'boom' }),
      { k: 'failed', q: Q, j: '2', w: 'w1', t: '3', reason: 'boom', attemptsMade: 2, ts: 2420 },
    ],
    faults: [{ k: 'fault', kind: 'stop', target: 'w1', ts: 2100, ms: 3000 }],
    finals: [
      completed('1', 1, done, 2630, { stalledCounter: 1 }),
      {
        q: Q,
        id: '2',
        state: 'failed',
        name: 'j2',
        failedReason: 'boom',
        finishedOn: 2425,
        hash: 'h2',
        listed: ['failed'],
      },
      // seq 3 committed although its enqueue threw; it ran and completed
      completed('3', 3, result('w1', '9', 1, 'h3'), 3000),
    ],
  });
  h.workers.push(...attempt('3', 'w1', '9', 1, 2900, { returns: result('w1', '9', 1, 'h3'), acked: true }));
  const report = checkHistory(h);
  assert.deepEqual(report.violations, []);
  const s = report.stats;
  assert.equal(s.jobs, 2);
  assert.equal(s.completed, 2);
  assert.equal(s.failed, 1);
  assert.equal(s.unacked, 2);
  assert.equal(s.unackedCommitted, 1);
  assert.equal(s.starts, 5);
  assert.equal(s.lostAttempts, 1);
  assert.equal(s.stalls, 1);
  assert.equal(s.faults.stop, 1);
});

test('soak checker: an acknowledged job that is gone is lost', () => {
  const h = healthy();
  h.finals = [{ q: Q, id: '1', state: 'unknown' }];
  assert.deepEqual(kinds(h), ['lost']);
  h.finals = [];
  assert.deepEqual(kinds(h), ['lost']);
});

test('soak checker: a job left waiting, delayed or active is not finished', () => {
  for (const state of ['waiting', 'prioritized', 'delayed', 'active']) {
    const h = history({ enqueues: [enqueue('1', 1)], finals: [{ q: Q, id: '1', state, name: 'j1', hash: 'h1' }] });
    const { violations } = checkHistory(h);
    assert.deepEqual(
      violations.map((v) => v.kind),
      ['not-finished'],
    );
    assert.match(violations[0]?.detail ?? '', new RegExp(`left ${state}`));
  }
});

test('soak checker: failed without a reason; finished but listed elsewhere too', () => {
  const h = history({
    enqueues: [enqueue('1', 1)],
    finals: [{ q: Q, id: '1', state: 'failed', name: 'j1', finishedOn: 3000, hash: 'h1', listed: ['failed'] }],
  });
  assert.deepEqual(kinds(h), ['failed-without-reason']);
  const listed = healthy();
  (listed.finals[0] as FinalJob).listed = ['waiting', 'completed'];
  assert.deepEqual(kinds(listed), ['listing-mismatch']);
});

test('soak checker: two acknowledged completions, and an acknowledged completion the record does not hold', () => {
  const h = healthy();
  const second = result('w2', '3', 2, 'h1');
  h.workers.push(...attempt('1', 'w2', '3', 2, 2100, { returns: second, acked: true }));
  h.finals = [completed('1', 1, second, 2130)];
  const { violations } = checkHistory(h);
  assert.deepEqual(
    violations.map((v) => v.kind),
    ['completed-twice', 'acked-completion-not-recorded'],
  );
  assert.match(violations[1]?.detail ?? '', /w1 was told attempt 1 completed; the record holds w2 attempt 3/);

  const failed = healthy();
  failed.finals = [
    { q: Q, id: '1', state: 'failed', name: 'j1', failedReason: 'stalled', finishedOn: 2500, hash: 'h1' },
  ];
  assert.deepEqual(kinds(failed), ['acked-completion-not-recorded']);
});

test('soak checker: a completion without a processor run, or with a result the processor did not return', () => {
  const never = healthy();
  never.workers = [];
  assert.deepEqual(kinds(never), ['completed-without-run']);

  const other = healthy();
  (other.finals[0] as FinalJob).returnvalue = result('w9', '7', 1, 'h1');
  assert.deepEqual(kinds(other), ['completed-without-run', 'acked-completion-not-recorded']);

  const threw = healthy();
  threw.workers = attempt('1', 'w1', '1', 1, 2000, { throws: 'boom' });
  assert.deepEqual(kinds(threw), ['result-mismatch']);

  const differs = healthy();
  (differs.finals[0] as FinalJob).returnvalue = result('w1', '1', 4, 'h1');
  assert.deepEqual(kinds(differs), ['result-mismatch']);

  const junk = healthy();
  (junk.finals[0] as FinalJob).returnvalue = 'ok';
  assert.deepEqual(kinds(junk), ['result-mismatch']);
});

test('soak checker: data that changed between enqueue, processor and record', () => {
  const stored = healthy();
  (stored.finals[0] as FinalJob).hash = 'hX';
  assert.deepEqual(kinds(stored), ['data-mismatch']);

  const seen = healthy();
  const v = result('w1', '1', 1, 'hX');
  seen.workers = attempt('1', 'w1', '1', 1, 2000, { returns: v, acked: true });
  (seen.finals[0] as FinalJob).returnvalue = v;
  assert.deepEqual(kinds(seen), ['data-mismatch']);
});

test('soak checker: a revoked attempt whose late result was recorded', () => {
  const h = healthy();
  // attempt #2 was claimed (so #1 had been revoked) and started before #1's result was recorded
  h.workers.push(...attempt('1', 'w2', '4', 2, 2010, { returns: result('w2', '4', 2, 'h1') }));
  const { violations } = checkHistory(h);
  assert.deepEqual(
    violations.map((v) => v.kind),
    ['stale-result-recorded'],
  );
  assert.match(violations[0]?.detail ?? '', /recorded result of w1 attempt 1 \(#1\), but w2 attempt 4 \(#2\)/);
});

test('soak checker: a processor that starts after the job finished', () => {
  const later = healthy();
  later.workers.push(...attempt('1', 'w2', '4', 2, 2500));
  const { violations, stats } = checkHistory(later);
  assert.deepEqual(
    violations.map((v) => v.kind),
    ['run-after-finish'],
  );
  assert.match(violations[0]?.detail ?? '', /started 470 ms after the job completed, claimed after the completing/);
  assert.equal(stats.runsAfterFinish, 1);

  const stale = healthy();
  stale.workers.push(...attempt('1', 'w2', '0', 0, 2500));
  assert.match(checkHistory(stale).violations[0]?.detail ?? '', /a stale claim/);

  const failed = history({
    enqueues: [enqueue('1', 1)],
    workers: [...attempt('1', 'w1', '1', 1, 2000, { throws: 'x' }), ...attempt('1', 'w1', '3', 2, 4000)],
    finals: [{ q: Q, id: '1', state: 'failed', name: 'j1', failedReason: 'x', finishedOn: 2020, hash: 'h1' }],
  });
  assert.deepEqual(kinds(failed), ['run-after-finish']);
});

test('soak checker: one enqueue found as two jobs, or a job nobody enqueued', () => {
  const h = healthy();
  const v = result('w1', '8', 1, 'h1');
  h.workers.push(...attempt('8', 'w1', '8', 1, 2000, { returns: v }));
  h.finals.push(completed('8', 1, v, 2040));
  assert.deepEqual(kinds(h), ['duplicate-job', 'duplicate-job']);

  const stray = healthy();
  stray.finals.push({ q: Q, id: '9', state: 'failed', name: 'j9', failedReason: 'x', finishedOn: 1, hash: 'h9' });
  const { violations } = checkHistory(stray);
  assert.deepEqual(
    violations.map((x) => x.kind),
    ['duplicate-job'],
  );
  assert.match(violations[0]?.detail ?? '', /never enqueued/);
});

test('soak checker: FIFO within a priority for the single consumer', () => {
  const ids = ['1', '2', '3', '4'];
  const fifo = (startOrder: string[]): SoakHistory => {
    const enqueues = ids.map((id, i) => enqueue(id, i + 1, { priority: id === '3' ? 5 : 0 }));
    const workers = startOrder.flatMap((id, i) => {
      const v = result('f', id, 1, `h${id}`);
      return attempt(id, 'f', id, 1, 2000 + i * 100, { returns: v, acked: true });
    });
    const finals = startOrder.map((id, i) => completed(id, Number(id), result('f', id, 1, `h${id}`), 2050 + i * 100));
    return history({ enqueues, workers, finals, fifoQueues: [Q] });
  };
  // job 3 is in another lane: its place relative to the others is free
  assert.deepEqual(kinds(fifo(['1', '3', '2', '4'])), []);
  assert.deepEqual(kinds(fifo(['3', '1', '2', '4'])), []);
  const { violations } = checkHistory(fifo(['1', '4', '2', '3']));
  assert.deepEqual(
    violations.map((v) => [v.kind, v.job]),
    [['fifo-order', '4']],
  );
  assert.match(violations[0]?.detail ?? '', /priority 0: started before job 2/);
});

test('soak checker: the report prints the counts and every violation with its job', () => {
  const h = healthy();
  h.enqueues.push(enqueue('2', 2), enqueue('3', 3));
  const report = checkHistory(h);
  const text = formatReport(report);
  assert.match(text, /jobs: 3 acknowledged, 1 completed, 0 failed/);
  assert.match(text, /violations: 2 \(lost 2\)/);
  assert.match(text, /\[lost\] q job 2: enqueue acknowledged at 1000, the job no longer exists/);
  assert.match(text, /\[lost\] q job 3:/);
  const capped = formatReport(report, 1);
  assert.doesNotMatch(capped, /\[lost\] q job 3:/);
  assert.match(capped, /\[lost\] \.\.\. and 1 more/);
});
