/**
 * The soak checker's flow invariants (test/soak/flow-checker.ts), each on a
 * hand-made history: a healthy flow passes, and each violation is found in
 * a history changed in one place.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkHistory, type ViolationKind } from '../soak/checker.js';
import type {
  ChildPolicy,
  EnqueueEvent,
  FinalJob,
  FlowEvent,
  SeenDeps,
  SoakHistory,
  SoakResult,
  WorkerEvent,
} from '../soak/history.js';
import { formatReport } from '../soak/report.js';

/** The flow: parent P in queue a; child A (a, BullMQ's default policy), child B (b, ignoreDependencyOnFailure). */
const P = { q: 'a', id: 'fP', seq: 1 };
const A = { q: 'a', id: 'fA', seq: 2 };
const B = { q: 'b', id: 'fB', seq: 3 };
type Ref = typeof P;

const result = (w: string, t: string, n: number, seq: number): SoakResult => ({ w, t, n, h: `h${seq}` });
const vA = result('w1', '1', 1, A.seq);
const vP = result('w1', '2', 1, P.seq);

function enqueue(j: Ref): EnqueueEvent {
  const { q, id, seq } = j;
  return {
    k: 'enqueue',
    q,
    id,
    seq,
    priority: 0,
    delay: 0,
    attempts: 1,
    custom: true,
    hash: `h${seq}`,
    bytes: 1,
    ts: 1000,
  };
}

function flow(policies: Partial<Record<'A' | 'B', ChildPolicy>> = {}, acked = true): FlowEvent {
  const child = (j: Ref, policy: ChildPolicy) => ({ q: j.q, id: j.id, seq: j.seq, policy, doomed: false });
  return {
    k: 'flow',
    acked,
    ...P,
    children: [child(A, policies.A ?? 'wait'), child(B, policies.B ?? 'ignore')],
    ts: 1000,
  };
}

function start(j: Ref, w: string, t: string, ts: number): WorkerEvent {
  return { k: 'start', q: j.q, j: j.id, w, t, n: 1, ts };
}

function returns(j: Ref, v: SoakResult, ts: number, deps?: SeenDeps): WorkerEvent[] {
  return [
    { k: 'end', q: j.q, j: j.id, w: v.w, t: v.t, ok: true, v, ts, ...(deps ? { deps } : {}) },
    { k: 'completed', q: j.q, j: j.id, w: v.w, t: v.t, ts: ts + 20 },
  ];
}

function throws(j: Ref, w: string, t: string, ts: number): WorkerEvent[] {
  return [
    { k: 'end', q: j.q, j: j.id, w, t, ok: false, err: 'boom', ts },
    { k: 'failed', q: j.q, j: j.id, w, t, reason: 'boom', attemptsMade: 1, ts: ts + 20 },
  ];
}

function final(j: Ref, state: string, extra: Partial<FinalJob> = {}): FinalJob {
  const listed = state === 'unknown' ? [] : [state];
  return { q: j.q, id: j.id, state, name: `j${j.seq}`, hash: `h${j.seq}`, listed, ...extra };
}

const done = (j: Ref, v: SoakResult, finishedOn: number) => final(j, 'completed', { returnvalue: v, finishedOn });
const failed = (j: Ref, failedReason: string, finishedOn: number) => final(j, 'failed', { failedReason, finishedOn });

const seen = (over: Partial<SeenDeps> = {}): SeenDeps => ({
  processed: { 'a:fA': vA },
  ignored: ['b:fB'],
  failed: [],
  unprocessed: [],
  ...over,
});

/** A finishes at 2030, B fails (ignored) at 2040, P runs at 3000 with A's value and completes. */
function healthy(): SoakHistory {
  return {
    enqueues: [enqueue(P), enqueue(A), enqueue(B)],
    unacked: [],
    readds: [],
    flows: [flow()],
    workers: [
      start(A, 'w1', '1', 2000),
      ...returns(A, vA, 2010),
      start(B, 'w2', '1', 2000),
      ...throws(B, 'w2', '1', 2010),
      start(P, 'w1', '2', 3000),
      ...returns(P, vP, 3010, seen()),
    ],
    faults: [],
    finals: [done(P, vP, 3030), done(A, vA, 2030), failed(B, 'boom', 2040)],
    fifoQueues: [],
  };
}

function kinds(h: SoakHistory): ViolationKind[] {
  return checkHistory(h).violations.map((v) => v.kind);
}

function detail(h: SoakHistory, kind: ViolationKind): string {
  return checkHistory(h).violations.find((v) => v.kind === kind)?.detail ?? '';
}

/** Whether worker event `e` is about job `j`. */
const of = (e: WorkerEvent, j: Ref) => 'j' in e && e.j === j.id;

/** The history with A's run replaced by one that throws: A ends failed at 2030. */
function failA(h: SoakHistory): SoakHistory {
  h.workers = [...h.workers.filter((e) => !of(e, A)), start(A, 'w1', '1', 2000), ...throws(A, 'w1', '1', 2010)];
  h.finals = h.finals.map((f) => (f.id === A.id ? failed(A, 'boom', 2030) : f));
  return h;
}

/** The history with P's final state replaced. */
function withParent(h: SoakHistory, p: FinalJob): SoakHistory {
  h.finals = [p, ...h.finals.filter((f) => f.id !== P.id)];
  return h;
}

test('soak checker, flows: a parent released by its children and run once with their values passes', () => {
  const report = checkHistory(healthy());
  assert.deepEqual(report.violations, []);
  assert.equal(report.stats.flows.acked, 1);
  assert.equal(report.stats.flows.parentsCompleted, 1);
  assert.equal(report.stats.flows.childrenIgnored, 1);
  assert.match(formatReport(report), /flows: 1 acknowledged, 0 unacknowledged .* 1 completed/);
});

test('soak checker, flows: a parent that starts before a child finished, or after a plain failure', () => {
  const unfinished = healthy();
  unfinished.finals[1] = done(A, vA, 3500); // A finished after P started
  assert.deepEqual(kinds(unfinished), ['parent-early-start']);
  assert.match(
    detail(unfinished, 'parent-early-start'),
    /w1 attempt 2 \(#1\) started while child a:fA had not finished/,
  );

  const lateEnd = healthy();
  lateEnd.workers = lateEnd.workers.map((e) => (e.k === 'end' && of(e, A) ? { ...e, ts: 3005 } : e));
  assert.deepEqual(kinds(lateEnd), ['parent-early-start']);
  assert.match(detail(lateEnd, 'parent-early-start'), /completing attempt ended 5 ms later/);

  // A failed, and its policy (the default) leaves the parent waiting: it must not run, nor complete
  const plain = failA(healthy());
  assert.deepEqual(kinds(plain), ['parent-early-start', 'parent-completed-unreleased']);
  assert.match(detail(plain, 'parent-completed-unreleased'), /child a:fA failed, which leaves its parent waiting/);
});

test('soak checker, flows: a parent completes at most once, and only with every child completed or ignored', () => {
  const twice = healthy();
  twice.workers.push({ k: 'completed', q: P.q, j: P.id, w: 'w3', t: '5', ts: 3100 });
  assert.deepEqual(kinds(twice), ['completed-twice', 'acked-completion-not-recorded']);

  // B failed with the default policy, yet the parent completed without an early start in the logs
  const unreleased = healthy();
  unreleased.flows = [flow({ B: 'wait' })];
  unreleased.workers = unreleased.workers.filter((e) => !of(e, P));
  assert.deepEqual(kinds(unreleased), ['completed-without-run', 'parent-completed-unreleased']);
});

test('soak checker, flows: the values a parent read must be its children recorded results', () => {
  const other = healthy();
  other.workers = other.workers.map((e) =>
    e.k === 'end' && of(e, P) ? { ...e, deps: seen({ processed: { 'a:fA': result('w9', '1', 1, A.seq) } }) } : e,
  );
  assert.deepEqual(kinds(other), ['children-values-mismatch']);
  assert.match(detail(other, 'children-values-mismatch'), /as a:fA's value, its recorded result is/);

  const missing = healthy();
  missing.workers = missing.workers.map((e) =>
    e.k === 'end' && of(e, P) ? { ...e, deps: seen({ processed: {}, unprocessed: ['a:fA'] }) } : e,
  );
  assert.match(detail(missing, 'children-values-mismatch'), /values of \[\], the completed children are \[a:fA\]/);

  const notIgnored = healthy();
  notIgnored.workers = notIgnored.workers.map((e) =>
    e.k === 'end' && of(e, P) ? { ...e, ok: false, err: 'x', deps: seen({ ignored: [], failed: ['b:fB'] }) } : e,
  ) as WorkerEvent[];
  assert.ok(kinds(notIgnored).includes('children-values-mismatch'));
  assert.match(detail(notIgnored, 'children-values-mismatch'), /ignored \[\], expected \[b:fB\]/);
});

test('soak checker, flows: a child failing with failParentOnFailure fails its parent, which never runs', () => {
  const good = (): SoakHistory => {
    const h = withParent(failA(healthy()), failed(P, 'child soak:a:fA failed', 2100));
    h.flows = [flow({ A: 'fail-parent' })];
    h.workers = h.workers.filter((e) => !of(e, P));
    return h;
  };
  const report = checkHistory(good());
  assert.deepEqual(report.violations, []);
  assert.equal(report.stats.flows.parentsFailedByChild, 1);

  const ran = good();
  ran.workers.push(start(P, 'w2', '2', 2050), ...throws(P, 'w2', '2', 2060));
  assert.deepEqual(kinds(ran), ['fail-parent-ignored']);
  assert.match(
    detail(ran, 'fail-parent-ignored'),
    /a:fA failed with failParentOnFailure, yet the parent's processor ran/,
  );

  const reason = withParent(good(), failed(P, 'planned failure', 2100));
  assert.match(detail(reason, 'fail-parent-ignored'), /it failed with 'planned failure'/);

  const waiting = withParent(good(), final(P, 'waiting-children'));
  assert.deepEqual(kinds(waiting), ['fail-parent-ignored']);
  assert.match(detail(waiting, 'fail-parent-ignored'), /it is waiting-children/);

  // the stall limit may fail the released parent first: not a violation
  assert.deepEqual(kinds(withParent(good(), failed(P, 'job stalled more than allowable limit', 2100))), []);
});

test('soak checker, flows: a parent left waiting though every child finished is a lost release', () => {
  const lost = withParent(healthy(), final(P, 'waiting-children'));
  lost.workers = lost.workers.filter((e) => !of(e, P));
  assert.deepEqual(kinds(lost), ['lost-release']);
  assert.match(detail(lost, 'lost-release'), /left waiting-children, though its 2 children finished/);

  // a plain failure leaves it waiting: counted, allowed
  const plain = failA(structuredClone(lost));
  const report = checkHistory(plain);
  assert.deepEqual(report.violations, []);
  assert.equal(report.stats.flows.parentsWaitingOnFailedChild, 1);
  assert.match(formatReport(report), /1 left waiting-children by a child's plain failure \(allowed\)/);
  assert.match(formatReport(report), /\[note\] a job fP: left waiting-children \(allowed\): a:fA \('boom'\) failed/);
  assert.doesNotMatch(formatReport(report, 25), /\[note\]/);

  // a child not finished is that child's violation, not the parent's
  const pending = structuredClone(lost);
  pending.finals[1] = final(A, 'delayed');
  pending.workers = pending.workers.filter((e) => !of(e, A));
  assert.deepEqual(kinds(pending), ['not-finished']);

  // a job in waiting-children that is no flow's parent is not finished
  const stray = structuredClone(lost);
  stray.flows = [];
  assert.deepEqual(kinds(stray), ['not-finished']);
});

test('soak checker, flows: an unacknowledged flow exists whole or not at all', () => {
  const unacked = (h: SoakHistory): SoakHistory => {
    h.flows = [flow({}, false)];
    h.enqueues = [];
    h.unacked = [
      { k: 'enqueue-unacked', q: 'a', seqs: [1, 2], hashes: ['h1', 'h2'], error: 'lost', ts: 1000 },
      { k: 'enqueue-unacked', q: 'b', seqs: [3], hashes: ['h3'], error: 'lost', ts: 1000 },
    ];
    return h;
  };
  const whole = checkHistory(unacked(healthy()));
  assert.deepEqual(whole.violations, []);
  assert.equal(whole.stats.flows.unackedCommitted, 1);

  const none = unacked(healthy());
  none.workers = [];
  none.finals = [];
  assert.deepEqual(kinds(none), []);

  const part = unacked(healthy());
  part.finals = part.finals.filter((f) => f.id !== B.id);
  assert.deepEqual(kinds(part), ['partial-flow']);
  assert.match(detail(part, 'partial-flow'), /missing b:fB/);
});
