/**
 * The soak's history checker: a pure function from a recorded history (see
 * history.ts) to the invariants it breaks, with counts of what happened.
 *
 * What it proves, per job:
 * - an acknowledged enqueue ends in exactly one final state: completed, or
 *   failed with a reason; never missing, never left waiting/delayed/active,
 *   and listed under that state only;
 * - at most one completion is acknowledged to a worker, and the one the
 *   record holds is the one acknowledged;
 * - a completed job ran its processor: the recorded result is what the
 *   processor returned in that attempt, on the data that was enqueued;
 * - the recorded result is the latest attempt's (a revoked attempt's late
 *   result must be rejected), and no processor starts after the job
 *   finished (by the record's finishedOn; all clocks are one machine's);
 * - a job found in a queue comes from exactly one enqueue;
 * - for the FIFO queues (one worker, concurrency 1, no faults): start order
 *   equals enqueue order within each priority;
 * - flows: see flow-checker.ts (a flow's parent left in waiting-children is
 *   judged there, not as unfinished);
 * - the extras queue (sizes, logs, deduplication, schedulers, the rate
 *   limit, promotion): see extras-checker.ts.
 */
import { checkExtras, type ExtrasStats, type ExtrasViolationKind } from './extras-checker.js';
import { checkFifo } from './fifo-checker.js';
import { checkFlows, emptyFlowStats, type FlowStats, type FlowViolationKind, flowParents } from './flow-checker.js';
import type { EnqueueEvent, FaultKind, FinalJob, SoakHistory, SoakResult, WorkerEvent } from './history.js';

export type ViolationKind =
  | 'lost'
  | 'not-finished'
  | 'failed-without-reason'
  | 'listing-mismatch'
  | 'completed-twice'
  | 'acked-completion-not-recorded'
  | 'completed-without-run'
  | 'result-mismatch'
  | 'data-mismatch'
  | 'stale-result-recorded'
  | 'run-after-finish'
  | 'duplicate-job'
  | 'fifo-order'
  | FlowViolationKind
  | ExtrasViolationKind;

export interface Violation {
  kind: ViolationKind;
  q: string;
  job: string;
  detail: string;
}

export interface SoakStats {
  jobs: number;
  unacked: number;
  unackedCommitted: number;
  completed: number;
  failed: number;
  failedByStallLimit: number;
  starts: number;
  completionAcks: number;
  failedAttempts: number;
  lostAttempts: number;
  stalls: number;
  sessionLosses: number;
  workerErrors: number;
  readds: number;
  runsAfterFinish: number;
  faults: Record<FaultKind, number>;
  flows: FlowStats;
  extras: ExtrasStats;
}

/** Something allowed worth naming: a parent left waiting by a child's plain failure. */
export interface Note {
  q: string;
  job: string;
  detail: string;
}

export interface CheckReport {
  stats: SoakStats;
  violations: Violation[];
  notes: Note[];
}

type Start = Extract<WorkerEvent, { k: 'start' }>;
type End = Extract<WorkerEvent, { k: 'end' }>;
type Ack = Extract<WorkerEvent, { k: 'completed' }>;

interface JobRuns {
  starts: Start[];
  ends: End[];
  acks: Ack[];
}

const key = (q: string, id: string) => `${q}\u0000${id}`;
const FINAL = new Set(['completed', 'failed']);

function isSoakResult(v: unknown): v is SoakResult {
  const r = v as SoakResult;
  return typeof r === 'object' && r !== null && typeof r.w === 'string' && typeof r.t === 'string';
}

function sameResult(a: SoakResult, b: SoakResult): boolean {
  return a.w === b.w && a.t === b.t && a.n === b.n && a.h === b.h;
}

function runsByJob(events: WorkerEvent[]): Map<string, JobRuns> {
  const runs = new Map<string, JobRuns>();
  const of = (q: string, j: string) => {
    let r = runs.get(key(q, j));
    if (!r) {
      r = { starts: [], ends: [], acks: [] };
      runs.set(key(q, j), r);
    }
    return r;
  };
  for (const e of events) {
    if (e.k === 'start') of(e.q, e.j).starts.push(e);
    else if (e.k === 'end') of(e.q, e.j).ends.push(e);
    else if (e.k === 'completed') of(e.q, e.j).acks.push(e);
  }
  return runs;
}

/** Checks a whole soak history. Deterministic: the same history gives the same report. */
export function checkHistory(h: SoakHistory): CheckReport {
  const violations: Violation[] = [];
  const notes: Note[] = [];
  const add = (kind: ViolationKind, q: string, job: string, detail: string) =>
    violations.push({ kind, q, job, detail });
  const runs = runsByJob(h.workers);
  const finals = new Map(h.finals.map((f) => [key(f.q, f.id), f]));
  const enqueued = new Map(h.enqueues.map((e) => [key(e.q, e.id), e]));
  const stats = countEvents(h);

  for (const e of h.enqueues) {
    const f = finals.get(key(e.q, e.id));
    if (!f || f.state === 'unknown') {
      add('lost', e.q, e.id, `enqueue acknowledged at ${e.ts}, the job no longer exists`);
    }
  }
  checkOrigins(h, add, stats);
  const parents = flowParents(h.flows);
  for (const f of h.finals) {
    if (f.state === 'unknown') continue;
    const r = runs.get(key(f.q, f.id)) ?? { starts: [], ends: [], acks: [] };
    const waits = f.state === 'waiting-children' && parents.has(key(f.q, f.id));
    checkJob(f, r, enqueued.get(key(f.q, f.id)), h.endedAt, add, waits);
    if (f.state === 'completed') stats.completed++;
    if (f.state === 'failed') stats.failed++;
    if (f.state === 'failed' && /stalled/.test(f.failedReason ?? '')) stats.failedByStallLimit++;
  }
  for (const q of h.fifoQueues) checkFifo(h, q, (job, detail) => add('fifo-order', q, job, detail));
  const none: JobRuns = { starts: [], ends: [], acks: [] };
  const ctx = {
    final: (q: string, id: string) => finals.get(key(q, id)),
    runs: (q: string, id: string) => runs.get(key(q, id)) ?? none,
    add,
    note: (q: string, job: string, detail: string) => notes.push({ q, job, detail }),
  };
  checkFlows(h.flows, ctx, stats.flows);
  stats.extras = checkExtras(h, add);
  stats.runsAfterFinish = violations.filter((v) => v.kind === 'run-after-finish').length;
  return { stats, violations, notes };
}

type Add = (kind: ViolationKind, q: string, job: string, detail: string) => void;

function checkJob(
  f: FinalJob,
  r: JobRuns,
  e: EnqueueEvent | undefined,
  endedAt: number | undefined,
  add: Add,
  waitsForChildren: boolean,
): void {
  const { q, id } = f;
  const enqueuedHash = e?.hash;
  if (!FINAL.has(f.state) && !waitsForChildren) {
    const due =
      e && endedAt !== undefined ? `, due ${((endedAt - e.ts - e.delay) / 1000).toFixed(1)} s before the end` : '';
    const opts = e ? `delay ${e.delay} ms, ${e.attempts} attempt(s)${due}; ` : '';
    const seen = `${r.starts.length} processor start(s), attemptsStarted ${f.attemptsStarted ?? '?'}`;
    add('not-finished', q, id, `left ${f.state} (${opts}${seen})`);
  }
  if (f.state === 'failed' && !f.failedReason) add('failed-without-reason', q, id, 'failed with no failedReason');
  if ((FINAL.has(f.state) || waitsForChildren) && f.listed && (f.listed.length !== 1 || f.listed[0] !== f.state)) {
    add('listing-mismatch', q, id, `${f.state}, but listed as [${f.listed.join(', ')}]`);
  }
  if (enqueuedHash && f.hash && f.hash !== enqueuedHash) {
    add('data-mismatch', q, id, `stored data hash ${f.hash}, enqueued ${enqueuedHash}`);
  }
  if (r.acks.length > 1) {
    const who = r.acks.map((a) => `${a.w} attempt ${a.t}`).join(', ');
    add('completed-twice', q, id, `${r.acks.length} completions acknowledged: ${who}`);
  }
  const recorded = f.state === 'completed' ? checkCompletion(f, r, enqueuedHash, add) : undefined;
  const holds = isSoakResult(f.returnvalue) ? `${f.returnvalue.w} attempt ${f.returnvalue.t}` : undefined;
  for (const a of r.acks) {
    const told = `${a.w} was told attempt ${a.t} completed`;
    if (f.state !== 'completed') add('acked-completion-not-recorded', q, id, `${told}; the job is ${f.state}`);
    else if (holds && holds !== `${a.w} attempt ${a.t}`) {
      add('acked-completion-not-recorded', q, id, `${told}; the record holds ${holds}`);
    }
  }
  if (FINAL.has(f.state) && f.finishedOn !== undefined) checkAfterFinish(f, r, recorded, add);
}

/** The recorded result must come from a processor run that returned it; returns that run's start. */
function checkCompletion(f: FinalJob, r: JobRuns, enqueuedHash: string | undefined, add: Add): Start | undefined {
  const { q, id } = f;
  if (r.starts.length === 0) {
    add('completed-without-run', q, id, 'completed, but no processor ever started it');
    return undefined;
  }
  const v = f.returnvalue;
  if (!isSoakResult(v)) {
    add('result-mismatch', q, id, `returnvalue ${JSON.stringify(v)} is not a processor's result`);
    return undefined;
  }
  const start = r.starts.find((s) => s.w === v.w && s.t === v.t);
  if (!start) {
    add('completed-without-run', q, id, `the recorded result names ${v.w} attempt ${v.t}, which never started`);
    return undefined;
  }
  const returned = r.ends.find((e) => e.w === v.w && e.t === v.t);
  if (!returned?.ok) {
    const what = returned ? `threw '${returned.err}'` : 'never returned';
    add('result-mismatch', q, id, `recorded result of ${v.w} attempt ${v.t}, whose processor ${what}`);
  } else if (!sameResult(returned.v, v)) {
    add(
      'result-mismatch',
      q,
      id,
      `recorded ${JSON.stringify(v)}, the processor returned ${JSON.stringify(returned.v)}`,
    );
  }
  if (enqueuedHash && v.h !== enqueuedHash) {
    add('data-mismatch', q, id, `the processor saw data hash ${v.h}, enqueued ${enqueuedHash}`);
  }
  return start;
}

/**
 * No processor may start after the job finished, and the recorded result
 * must be the latest claimed attempt's: an attempt claimed later (higher
 * attemptsStarted) that started before the finish means the recorded
 * attempt had been revoked, so its result should have been rejected.
 */
function checkAfterFinish(f: FinalJob, r: JobRuns, recorded: Start | undefined, add: Add): void {
  const finishedOn = f.finishedOn as number;
  for (const s of r.starts) {
    if (recorded && s === recorded) continue;
    const attempt = `${s.w} attempt ${s.t} (#${s.n})`;
    if (s.ts > finishedOn) {
      const order = recorded ? (s.n > recorded.n ? ', claimed after the completing attempt' : ', a stale claim') : '';
      add('run-after-finish', f.q, f.id, `${attempt} started ${s.ts - finishedOn} ms after the job ${f.state}${order}`);
    } else if (recorded && s.n > recorded.n) {
      const by = `${recorded.w} attempt ${recorded.t} (#${recorded.n})`;
      add('stale-result-recorded', f.q, f.id, `recorded result of ${by}, but ${attempt} was claimed after it`);
    }
  }
}

/** Every job found comes from one enqueue; unacknowledged enqueues that committed are counted. */
function checkOrigins(h: SoakHistory, add: Add, stats: SoakStats): void {
  const ackedSeq = new Map<string, string>();
  for (const e of h.enqueues) ackedSeq.set(key(e.q, String(e.seq)), e.id);
  const unackedSeq = new Set(h.unacked.flatMap((u) => u.seqs.map((s) => key(u.q, String(s)))));
  const seen = new Map<string, string>();
  for (const f of h.finals) {
    if (f.state === 'unknown' || !f.name) continue;
    const seq = /^j(\d+)$/.exec(f.name)?.[1];
    if (seq === undefined) continue;
    const k = key(f.q, seq);
    const other = seen.get(k);
    if (other !== undefined && other !== f.id) {
      add('duplicate-job', f.q, f.id, `enqueue #${seq} exists twice: as job ${other} and as job ${f.id}`);
    }
    seen.set(k, f.id);
    const ackedAs = ackedSeq.get(k);
    if (ackedAs === f.id) continue;
    if (ackedAs !== undefined) {
      add('duplicate-job', f.q, f.id, `enqueue #${seq} was acknowledged as job ${ackedAs}, yet job ${f.id} holds it`);
    } else if (unackedSeq.has(k)) {
      stats.unackedCommitted++;
    } else {
      add('duplicate-job', f.q, f.id, `job ${f.id} (enqueue #${seq}) was never enqueued`);
    }
  }
}

function countEvents(h: SoakHistory): SoakStats {
  const faults: Record<FaultKind, number> = {
    kill: 0,
    stop: 0,
    freeze: 0,
    cut: 0,
    'lose-replies': 0,
    expire: 0,
    restart: 0,
    'kill-restart': 0,
    'restart-kill': 0,
  };
  for (const f of h.faults) faults[f.kind]++;
  const count = (k: WorkerEvent['k']) => h.workers.filter((e) => e.k === k).length;
  return {
    jobs: h.enqueues.length,
    unacked: h.unacked.reduce((n, u) => n + u.seqs.length, 0),
    unackedCommitted: 0,
    completed: 0,
    failed: 0,
    failedByStallLimit: 0,
    starts: count('start'),
    completionAcks: count('completed'),
    failedAttempts: count('failed'),
    lostAttempts: count('lost'),
    stalls: count('stalled'),
    sessionLosses: h.workers.filter((e) => e.k === 'session' && e.state === 'lost').length,
    workerErrors: count('error'),
    readds: h.readds.length,
    runsAfterFinish: 0,
    faults,
    flows: emptyFlowStats(),
    extras: checkExtras({ ...h, extras: undefined }, () => undefined),
  };
}
