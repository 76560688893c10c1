/**
 * The soak checker's flow invariants (called by checker.ts), for every flow
 * the producer added, acknowledged or not (a flow whose add threw but
 * committed is checked like the others):
 * - a flow exists whole or not at all;
 * - a parent's processor never starts before every child finished:
 *   completed, or failed with ignoreDependencyOnFailure. Judged by the
 *   logs' order: the child's `finishedOn` and the end of its completing
 *   attempt against the start's time (every process is on one machine);
 * - a parent completes only if every child completed or was ignored, and
 *   each run of it read exactly the completed children's recorded results
 *   as their values, the ignored ones as ignored, nothing else;
 * - a child failing with failParentOnFailure fails its parent with
 *   `child <prefix>:<queue>:<id> failed`, without the parent's processor
 *   running;
 * - a parent whose children all finished is not left in waiting-children
 *   (a lost release). One left there by a child's plain failure is counted,
 *   not a violation: BullMQ's default is that the parent waits.
 * A parent completing twice is `completed-twice`, as for any job.
 */
import type { FinalJob, FlowChild, FlowEvent, SeenDeps, WorkerEvent } from './history.js';

type Start = Extract<WorkerEvent, { k: 'start' }>;
type End = Extract<WorkerEvent, { k: 'end' }>;

export type FlowViolationKind =
  | 'partial-flow'
  | 'parent-early-start'
  | 'parent-completed-unreleased'
  | 'children-values-mismatch'
  | 'fail-parent-ignored'
  | 'lost-release';

export interface FlowStats {
  acked: number;
  unacked: number;
  unackedCommitted: number;
  parentsCompleted: number;
  parentsFailedByChild: number;
  /** Failed by their own attempts (the processor threw, or the stall limit). */
  parentsFailedOwn: number;
  /** Left in waiting-children by a child's plain failure (allowed). */
  parentsWaitingOnFailedChild: number;
  childrenIgnored: number;
  childrenFailedParent: number;
}

export interface FlowContext {
  final(q: string, id: string): FinalJob | undefined;
  runs(q: string, id: string): { starts: Start[]; ends: End[] };
  add(kind: FlowViolationKind, q: string, job: string, detail: string): void;
  /** Names an allowed outcome in the report. */
  note(q: string, job: string, detail: string): void;
}

/** Where a child stands at the end, as its parent sees it. */
type Standing = 'completed' | 'ignored' | 'fails-parent' | 'failed' | 'unfinished';

interface Kid {
  c: FlowChild;
  f: FinalJob | undefined;
  s: Standing;
  key: string;
}

/** The reason zkq gives when a job stalled too often (it may win over a deferred child failure). */
const STALL_LIMIT = /stalled more than allowable limit/;

export function emptyFlowStats(): FlowStats {
  return {
    acked: 0,
    unacked: 0,
    unackedCommitted: 0,
    parentsCompleted: 0,
    parentsFailedByChild: 0,
    parentsFailedOwn: 0,
    parentsWaitingOnFailedChild: 0,
    childrenIgnored: 0,
    childrenFailedParent: 0,
  };
}

/** Flow parents (`<queue>\0<id>` keys): their waiting-children end state is judged here, not as unfinished. */
export function flowParents(flows: FlowEvent[]): Set<string> {
  return new Set(flows.map((f) => `${f.q}\u0000${f.id}`));
}

export function checkFlows(flows: FlowEvent[], ctx: FlowContext, stats: FlowStats): void {
  for (const flow of flows) {
    if (flow.acked) stats.acked++;
    else stats.unacked++;
    checkFlow(flow, ctx, stats);
  }
}

function standing(c: FlowChild, f: FinalJob | undefined): Standing {
  if (f?.state === 'completed') return 'completed';
  if (f?.state !== 'failed') return 'unfinished';
  return c.policy === 'ignore' ? 'ignored' : c.policy === 'fail-parent' ? 'fails-parent' : 'failed';
}

const exists = (f: FinalJob | undefined) => f !== undefined && f.state !== 'unknown';

function checkFlow(flow: FlowEvent, ctx: FlowContext, stats: FlowStats): void {
  const parent = ctx.final(flow.q, flow.id);
  const kids: Kid[] = flow.children.map((c) => {
    const f = ctx.final(c.q, c.id);
    return { c, f, s: standing(c, f), key: `${c.q}:${c.id}` };
  });
  if (!flow.acked) {
    const present = [parent, ...kids.map((k) => k.f)].filter(exists).length;
    if (present === 0) return;
    stats.unackedCommitted++;
    if (present < kids.length + 1) {
      const all = [{ key: `${flow.q}:${flow.id}`, f: parent }, ...kids];
      const missing = all.filter((j) => !exists(j.f)).map((j) => j.key);
      ctx.add('partial-flow', flow.q, flow.id, `an unacknowledged flow exists in part: missing ${missing.join(', ')}`);
      return;
    }
  }
  if (!parent || !exists(parent)) return; // lost: reported as such
  const runs = ctx.runs(flow.q, flow.id);
  const early = checkStarts(flow, kids, runs.starts, ctx);
  checkValues(flow, kids, runs, early, ctx);
  checkOutcome(flow, parent, kids, runs.starts, early, ctx, stats);
}

/** Each start of the parent came after every child finished in a way that releases it; returns the early ones. */
function checkStarts(flow: FlowEvent, kids: Kid[], starts: Start[], ctx: FlowContext): Set<Start> {
  const early = new Set<Start>();
  for (const s of starts) {
    const why = kids.map((k) => tooEarly(k, s, ctx)).find((w) => w !== undefined);
    if (!why) continue;
    early.add(s);
    ctx.add('parent-early-start', flow.q, flow.id, `${s.w} attempt ${s.t} (#${s.n}) started while ${why}`);
  }
  return early;
}

/** Why child `k` had not released its parent when `s` started, or undefined. */
function tooEarly(k: Kid, s: Start, ctx: FlowContext): string | undefined {
  if (k.s === 'unfinished') return `child ${k.key} is ${k.f?.state ?? 'missing'} even at the end`;
  if (k.s === 'failed') return `child ${k.key} failed without a policy that releases its parent`;
  if (k.s === 'fails-parent') return undefined; // its parent must not run at all: fail-parent-ignored
  const finishedOn = k.f?.finishedOn;
  if (finishedOn !== undefined && finishedOn > s.ts) {
    return `child ${k.key} had not finished (${k.f?.state} ${finishedOn - s.ts} ms later)`;
  }
  const v = k.f?.returnvalue as { w?: string; t?: string } | undefined;
  if (k.s !== 'completed' || !v) return undefined;
  const end = ctx.runs(k.c.q, k.c.id).ends.find((e) => e.w === v.w && e.t === v.t);
  if (end && end.ts > s.ts) return `child ${k.key}'s completing attempt ended ${end.ts - s.ts} ms later`;
  return undefined;
}

/** JSON with object keys sorted, to compare values read from two places. */
function canon(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** What each run of the parent read of its dependencies matches its children's recorded ends. */
function checkValues(
  flow: FlowEvent,
  kids: Kid[],
  runs: { starts: Start[]; ends: End[] },
  early: Set<Start>,
  ctx: FlowContext,
): void {
  const want: SeenDeps = {
    processed: Object.fromEntries(kids.filter((k) => k.s === 'completed').map((k) => [k.key, k.f?.returnvalue])),
    ignored: kids.filter((k) => k.s === 'ignored').map((k) => k.key),
    failed: [],
    unprocessed: [],
  };
  for (const e of runs.ends) {
    if (!e.deps) continue;
    const start = runs.starts.find((s) => s.w === e.w && s.t === e.t);
    if (start && early.has(start)) continue; // reported as an early start
    const diff = depsDiff(want, e.deps);
    if (diff) ctx.add('children-values-mismatch', flow.q, flow.id, `${e.w} attempt ${e.t} read ${diff}`);
  }
}

function depsDiff(want: SeenDeps, got: SeenDeps): string | undefined {
  const keys = (o: Record<string, unknown>) => Object.keys(o).sort().join(', ');
  if (keys(got.processed) !== keys(want.processed)) {
    return `values of [${keys(got.processed)}], the completed children are [${keys(want.processed)}]`;
  }
  for (const [k, v] of Object.entries(want.processed)) {
    if (canon(got.processed[k]) !== canon(v)) {
      return `${canon(got.processed[k])} as ${k}'s value, its recorded result is ${canon(v)}`;
    }
  }
  for (const list of ['ignored', 'failed', 'unprocessed'] as const) {
    const a = [...got[list]].sort().join(', ');
    const b = [...want[list]].sort().join(', ');
    if (a !== b) return `${list} [${a}], expected [${b}]`;
  }
  return undefined;
}

function checkOutcome(
  flow: FlowEvent,
  parent: FinalJob,
  kids: Kid[],
  starts: Start[],
  early: Set<Start>,
  ctx: FlowContext,
  stats: FlowStats,
): void {
  const { q, id } = flow;
  stats.childrenIgnored += kids.filter((k) => k.s === 'ignored').length;
  const failing = kids.filter((k) => k.s === 'fails-parent');
  if (failing.length > 0) {
    stats.childrenFailedParent += failing.length;
    const names = failing.map((k) => k.key).join(', ');
    const wrong: string[] = [];
    if (starts.length > 0) wrong.push(`the parent's processor ran (${starts.length} start(s))`);
    const reason = parent.failedReason ?? '';
    const named = failing.some((k) => reason.endsWith(`:${k.key} failed`) && reason.startsWith('child '));
    if (parent.state === 'failed' && !named && !STALL_LIMIT.test(reason)) wrong.push(`it failed with '${reason}'`);
    if (parent.state === 'completed' || parent.state === 'waiting-children') wrong.push(`it is ${parent.state}`);
    if (wrong.length > 0) {
      ctx.add('fail-parent-ignored', q, id, `${names} failed with failParentOnFailure, yet ${wrong.join('; ')}`);
    } else if (parent.state === 'failed') stats.parentsFailedByChild++;
    return;
  }
  if (parent.state === 'failed') stats.parentsFailedOwn++;
  if (parent.state === 'completed') {
    stats.parentsCompleted++;
    const bad = kids.find((k) => k.s !== 'completed' && k.s !== 'ignored');
    if (bad) {
      const how = bad.s === 'failed' ? 'failed, which leaves its parent waiting' : `is ${bad.f?.state ?? 'missing'}`;
      ctx.add('parent-completed-unreleased', q, id, `completed, but child ${bad.key} ${how}`);
    }
  }
  if (parent.state !== 'waiting-children' || kids.some((k) => k.s === 'unfinished')) return;
  const plain = kids.filter((k) => k.s === 'failed');
  if (plain.length > 0) {
    stats.parentsWaitingOnFailedChild++;
    const why = plain.map((k) => `${k.key} ('${k.f?.failedReason}')`).join(', ');
    ctx.note(q, id, `left waiting-children (allowed): ${why} failed with BullMQ's default policy`);
    return;
  }
  const last = Math.max(...kids.map((k) => k.f?.finishedOn ?? 0));
  const ran = early.size > 0 ? ' (and ran early)' : '';
  ctx.add(
    'lost-release',
    q,
    id,
    `left waiting-children${ran}, though its ${kids.length} children finished (the last at ${last}): ` +
      kids.map((k) => `${k.key} ${k.s}`).join(', '),
  );
}
