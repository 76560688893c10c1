/**
 * The checks of the extras queue (extras.ts), a pure function of the
 * history. Times: the producer's and the workers' clocks are one machine's;
 * the rate limit is judged on ZooKeeper's clock alone (claim nodes' ctime).
 */
import { BIG_ERROR_BYTES, bigErrorHead, LOG_LINE_BYTES } from './extra-attempt.js';
import type { FinalJob, SoakHistory, WorkerEvent } from './history.js';

export type ExtrasViolationKind =
  | 'oversized-error-not-failed'
  | 'too-large-not-failed-once'
  | 'logs-wrong'
  | 'dedup-not-live'
  | 'dedup-duplicate'
  | 'dedup-key-left'
  | 'scheduler-gap'
  | 'scheduler-double-tick'
  | 'rate-limit-exceeded'
  | 'late-promotion';

/** The most a reason is kept at (sizes.ts MAX_REASON_BYTES). */
const MAX_REASON_BYTES = 16 * 1024;
/** The most bytes of log lines a job keeps (sizes.ts MAX_LOG_BYTES). */
const MAX_LOG_BYTES = 768 * 1024;
/** A due job's first processor start comes at most this long after its due time (promotion, claim, rate limit). */
export const PROMOTE_BOUND_MS = 10_000;
/** Most time between two iterations of one scheduler (and from its upsert to the first, from the last to its removal). */
export const TICK_GAP_BOUND_MS = 15_000;
/**
 * What a ZooKeeper restart adds to both bounds, besides its own length (down
 * and started again), when it falls within the span judged: two worker
 * session timeouts (the clients may give their sessions up and come back
 * with new ones, and the claims of a session given up last until it expires).
 */
export const RESTART_ALLOWANCE_MS = 16_000;
/** Tolerance between the producer's clock readings and ZooKeeper's (one machine: the same clock, read at other moments). */
const CLOCK_MARGIN_MS = 250;

export interface ExtrasStats {
  bigErrors: number;
  tooLarge: number;
  logJobs: number;
  dedupAdds: number;
  deduplicated: number;
  ticks: number;
  claims: number;
  promoted: number;
  latestPromotionMs: number;
}

type Add = (kind: ExtrasViolationKind, q: string, job: string, detail: string) => void;

export function checkExtras(h: SoakHistory, add: Add): ExtrasStats {
  const x = h.extras;
  const stats: ExtrasStats = {
    bigErrors: 0,
    tooLarge: 0,
    logJobs: 0,
    dedupAdds: 0,
    deduplicated: 0,
    ticks: 0,
    claims: 0,
    promoted: 0,
    latestPromotionMs: 0,
  };
  if (!x) return stats;
  const q = x.q;
  const finals = new Map(h.finals.filter((f) => f.q === q).map((f) => [f.id, f]));
  const events = new Map<string, WorkerEvent[]>();
  for (const e of h.workers) {
    if (!('q' in e) || e.q !== q || !('j' in e)) continue;
    events.set(e.j, [...(events.get(e.j) ?? []), e]);
  }
  // each worker's events are in its order; across workers, by time
  for (const evs of events.values()) evs.sort((a, b) => a.ts - b.ts);
  const of = (id: string) => events.get(id) ?? [];

  // sizes and logs, per job by what its processor does
  for (const [id, job] of Object.entries(x.jobs)) {
    const f = finals.get(id);
    if (!f || f.state === 'unknown') continue;
    const reason = f.failedReason ?? '';
    if (job.x === 'big-error') {
      stats.bigErrors++;
      const cut = reason.includes('…[truncated') && Buffer.byteLength(reason) <= MAX_REASON_BYTES;
      if (f.state !== 'failed' || !reason.startsWith(bigErrorHead(id)) || !cut) {
        const was = `'${reason.slice(0, 120)}' (${Buffer.byteLength(reason)} B)`;
        add(
          'oversized-error-not-failed',
          q,
          id,
          `threw ${BIG_ERROR_BYTES} B in every attempt; ended ${f.state}, ${was}`,
        );
      }
    } else if (job.x === 'too-large') {
      stats.tooLarge++;
      // every attempt returns too much: the first finish must fail it, and nothing may run after
      const acks = of(id).filter((w) => w.k === 'failed' || w.k === 'completed');
      const first = acks[0];
      const later = first ? of(id).filter((w) => w.k === 'start' && w.ts > first.ts) : [];
      if (f.state !== 'failed' || !/result too large/.test(reason) || acks.length !== 1 || later.length > 0) {
        add(
          'too-large-not-failed-once',
          q,
          id,
          `ended ${f.state} ('${reason.slice(0, 100)}'); ${acks.length} finished attempt(s) acknowledged, ` +
            `${later.length} start(s) after the first`,
        );
      }
    } else if (job.x === 'logs') {
      stats.logJobs++;
      checkLogs(f, job.keepLogs ?? 1000, job.lines ?? 0, of(id), (detail) => add('logs-wrong', q, id, detail));
    }
  }

  checkDedup(h, finals, add, stats);
  checkSchedulers(h, finals, add, stats);
  checkRateLimit(h, add, stats);
  checkPromotion(h, finals, of, add, stats);
  return stats;
}

/**
 * The log lines kept: at most keepLogs, each a whole line some attempt
 * logged, in order within an attempt; the finishing attempt wrote its lines
 * just before its outcome, so they end the log, all of them that fit.
 */
function checkLogs(f: FinalJob, keep: number, lines: number, evs: WorkerEvent[], bad: (detail: string) => void): void {
  const logs = f.logs ?? [];
  if (logs.length > keep) bad(`${logs.length} log lines kept, keepLogs ${keep}`);
  const parsed = logs.map((l) => /^([^:]+):(\d+):/.exec(l));
  const malformed = logs.findIndex((l, i) => !parsed[i] || Buffer.byteLength(l) !== LOG_LINE_BYTES);
  if (malformed >= 0) bad(`line ${malformed} is not a line the processor logged: '${logs[malformed]?.slice(0, 40)}'`);
  for (let i = 1; i < parsed.length; i++) {
    const a = parsed[i - 1];
    const b = parsed[i];
    if (a && b && a[1] === b[1] && Number(b[2]) !== Number(a[2]) + 1) {
      bad(`lines out of order: '${a[0]}' then '${b[0]}'`);
      break;
    }
  }
  let finisher: string | undefined;
  if (f.state === 'completed') finisher = (f.returnvalue as { t?: string } | undefined)?.t;
  else if (f.state === 'failed') {
    const last = evs.filter((e) => e.k === 'failed').at(-1);
    finisher = last?.k === 'failed' ? last.t : undefined;
  }
  if (!finisher) return;
  // lines after the finisher's are a revoked attempt's (they stay, as in BullMQ); short of all of
  // its lines (up to keepLogs), the log is at its byte bound
  const lost = new Set(evs.flatMap((e) => (e.k === 'lost' ? [e.t] : [])));
  const lastOwn = parsed.findLastIndex((p) => p?.[1] === finisher);
  const own = parsed.filter((p) => p?.[1] === finisher).length;
  const after = parsed.slice(lastOwn + 1).filter((p) => !p || !lost.has(p[1] as string));
  const full = logs.length >= Math.min(keep, Math.floor(MAX_LOG_BYTES / LOG_LINE_BYTES));
  const ownLast = parsed[lastOwn];
  // a revoked attempt that logs after the finish may push every line of the finisher out of a full log
  const pushedOut = lastOwn < 0 && full && lines > 0 && parsed.every((p) => p && lost.has(p[1] as string));
  const ownEnds = lastOwn >= 0 && Number(ownLast?.[2]) === lines - 1;
  if (pushedOut) return;
  if (!ownEnds || after.length > 0 || (own < Math.min(keep, lines) && !full)) {
    const ends = `the log ends '${logs.at(-1)?.slice(0, 20) ?? ''}'`;
    bad(
      `${ends}, ${own} lines of the finishing attempt ${finisher} (of ${lines}, keepLogs ${keep}), ${after.length} after them not of a revoked attempt`,
    );
  }
}

function checkDedup(h: SoakHistory, finals: Map<string, FinalJob>, add: Add, stats: ExtrasStats): void {
  const x = h.extras;
  if (!x) return;
  const own = new Map<string, { sent: number; ts: number }>();
  for (const a of x.dedupAdds) if (a.own && a.id) own.set(a.id, a);
  const bySeq = new Map(x.dedupAdds.map((a) => [a.seq, a]));
  // jobs created per deduplication id (acknowledged, or committed though the add threw), in order
  const created = new Map<string, { id: string; sent: number; ts: number }[]>();
  for (const f of finals.values()) {
    const seq = /^j(\d+)$/.exec(f.name ?? '')?.[1];
    const a = seq !== undefined ? bySeq.get(Number(seq)) : undefined;
    if (!a) continue;
    created.set(a.dedup, [...(created.get(a.dedup) ?? []), { id: f.id, sent: a.sent, ts: a.ts }]);
  }
  for (const a of x.dedupAdds) {
    if (!a.id) continue;
    stats.dedupAdds++;
    if (a.own) {
      // no earlier job of this id may still have been kept when this one was added
      for (const k of created.get(a.dedup) ?? []) {
        if (k.id === a.id || k.ts >= a.sent) continue;
        const kf = finals.get(k.id);
        const keptUntil = a.ttl !== undefined ? k.sent + a.ttl : (kf?.finishedOn ?? Number.POSITIVE_INFINITY);
        if (keptUntil > a.ts + CLOCK_MARGIN_MS) {
          add(
            'dedup-duplicate',
            x.q,
            a.id,
            `added under '${a.dedup}' at ${a.sent}-${a.ts} while job ${k.id} (added ${k.ts}) was kept until ${keptUntil}`,
          );
        }
      }
      continue;
    }
    stats.deduplicated++;
    const k = (created.get(a.dedup) ?? []).find((c) => c.id === a.id);
    const kf = finals.get(a.id);
    if (!k || !kf) {
      add('dedup-not-live', x.q, a.id, `an add under '${a.dedup}' resolved with ${a.id}, no job created under that id`);
      continue;
    }
    const keptUntil = a.ttl !== undefined ? k.ts + a.ttl : (kf.finishedOn ?? Number.POSITIVE_INFINITY);
    if (k.sent > a.ts || keptUntil + CLOCK_MARGIN_MS < a.sent) {
      add(
        'dedup-not-live',
        x.q,
        a.id,
        `an add under '${a.dedup}' at ${a.sent} resolved with ${a.id}, kept ${k.sent}-${keptUntil}`,
      );
    }
  }
  for (const k of x.dedupKeys) {
    if (k.live !== null)
      add('dedup-key-left', x.q, k.live, `key '${k.dedup}' still live at the end (every job finished)`);
    else if (k.ttl === undefined && k.exists)
      add('dedup-key-left', x.q, '-', `key '${k.dedup}' (no ttl) left after its jobs finished`);
  }
}

/** The bound for a span from `from` to `to`, widened by each ZooKeeper restart within it. */
function bound(h: SoakHistory, base: number, from: number, to: number): number {
  let b = base;
  for (const f of h.faults) {
    if (f.kind !== 'restart' && f.kind !== 'kill-restart' && f.kind !== 'restart-kill') continue;
    if (f.ts <= to && f.ts + f.ms + RESTART_ALLOWANCE_MS >= from) b += f.ms + RESTART_ALLOWANCE_MS;
  }
  return b;
}

function tickOf(id: string): { s: string; at: number } | undefined {
  const m = /^repeat:([^:]+):(\d+)$/.exec(id);
  return m ? { s: m[1] as string, at: Number(m[2]) } : undefined;
}

function checkSchedulers(h: SoakHistory, finals: Map<string, FinalJob>, add: Add, stats: ExtrasStats): void {
  const x = h.extras;
  if (!x) return;
  for (const s of x.schedulers) {
    const ticks = [...finals.values()]
      .map((f) => tickOf(f.id))
      .filter((t): t is { s: string; at: number } => t?.s === s.id)
      .map((t) => t.at)
      .sort((a, b) => a - b);
    stats.ticks += ticks.length;
    const points = [s.upserted, ...ticks, ...(s.removed ? [s.removed] : [])];
    for (let i = 1; i < points.length; i++) {
      const gap = (points[i] as number) - (points[i - 1] as number);
      if (gap > bound(h, TICK_GAP_BOUND_MS, points[i - 1] as number, points[i] as number)) {
        add(
          'scheduler-gap',
          x.q,
          s.id,
          `no iteration for ${gap} ms (${points[i - 1]} to ${points[i]}), every ${s.every} ms`,
        );
      }
      if (i > 1 && i < points.length - (s.removed ? 1 : 0) && gap < s.every / 2) {
        add(
          'scheduler-double-tick',
          x.q,
          s.id,
          `iterations ${points[i - 1]} and ${points[i]}, ${gap} ms apart, every ${s.every} ms`,
        );
      }
    }
  }
}

/**
 * Claims by ZooKeeper's ctime split into consecutive windows, each opened
 * at least `duration` after the last and holding at most `max` (a claim
 * decided in a window may commit after its nominal end): decided by keeping
 * every feasible (opener, count) state, dominated ones dropped.
 */
export function rateLimitFeasible(ctimes: number[], max: number, duration: number): number | undefined {
  const sorted = [...ctimes].sort((a, b) => a - b);
  let states: { open: number; count: number }[] = [];
  for (const [i, t] of sorted.entries()) {
    if (i === 0) {
      states = [{ open: t, count: 1 }];
      continue;
    }
    const next: { open: number; count: number }[] = [];
    for (const s of states) {
      if (s.count < max) next.push({ open: s.open, count: s.count + 1 });
      if (t >= s.open + duration) next.push({ open: t, count: 1 });
    }
    states = next.filter(
      (a) =>
        !next.some((b) => b !== a && b.open <= a.open && b.count <= a.count && (b.open < a.open || b.count < a.count)),
    );
    states = states.filter((a, k) => states.findIndex((b) => b.open === a.open && b.count === a.count) === k);
    if (states.length === 0) return t;
  }
  return undefined;
}

function checkRateLimit(h: SoakHistory, add: Add, stats: ExtrasStats): void {
  const x = h.extras;
  if (!x) return;
  const seen = new Map<string, number>();
  for (const e of h.workers) if (e.k === 'claim' && e.q === x.q) seen.set(`${e.j}@${e.ctime}`, e.ctime);
  stats.claims = seen.size;
  const at = rateLimitFeasible([...seen.values()], x.limit.max, x.limit.duration);
  if (at !== undefined) {
    const around = [...seen.values()].filter((t) => t > at - x.limit.duration && t <= at).length;
    add(
      'rate-limit-exceeded',
      x.q,
      '-',
      `the claim at ${at} (ZooKeeper's time) fits no window of ${x.limit.max} per ${x.limit.duration} ms (${around} claims in the ${x.limit.duration} ms up to it)`,
    );
  }
}

function checkPromotion(
  h: SoakHistory,
  finals: Map<string, FinalJob>,
  of: (id: string) => WorkerEvent[],
  add: Add,
  stats: ExtrasStats,
): void {
  const x = h.extras;
  if (!x) return;
  const due: { id: string; at: number }[] = [];
  for (const e of h.enqueues) if (e.q === x.q && e.delay > 0) due.push({ id: e.id, at: e.ts + e.delay });
  for (const f of finals.values()) {
    const t = tickOf(f.id);
    if (t) due.push({ id: f.id, at: t.at });
  }
  for (const d of due) {
    const first = of(d.id).find((e) => e.k === 'start');
    if (!first) continue;
    stats.promoted++;
    const late = first.ts - d.at;
    stats.latestPromotionMs = Math.max(stats.latestPromotionMs, late);
    if (late > bound(h, PROMOTE_BOUND_MS, d.at, first.ts))
      add('late-promotion', x.q, d.id, `first started ${late} ms after its due time`);
  }
}
