/**
 * The targets the bench checks, each against figures of the same run: zkq
 * against BullMQ on Redis without persistence and on Redis with every write
 * fsynced (`appendfsync always`, ZooKeeper's durability), against zkq's own
 * inline drain on a standalone server, or against a fixed bound. Ratios are
 * taken per run, then the median of the runs (`withRatios`).
 */
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { fmt, table } from './lib.js';
import type { Metrics } from './scenarios.js';

/** Node writes of one drained job with removeOnComplete: claim (claim node, record) and finish (record, pointer, claim). */
export const WRITES_PER_DRAINED_JOB = 5;
/** Nodes an enqueued job creates: its record and its pointer. */
export const NODES_PER_ENQUEUED_JOB = 2;

/** Ratios are minimums; latencies, CPU and traffic maximums (the herd's idle rate strictly below). */
export const GOALS = {
  /** Inline drain ÷ BullMQ's, Redis without persistence. */
  drain: 1.0,
  /** Inline drain ÷ BullMQ's, Redis with appendfsync always. */
  drainFsync: 1.5,
  e2e: 1.0,
  addBulk: 1.5,
  add: 1.0,
  /** File processor on piscina threads ÷ the inline drain. */
  threads: 0.85,
  /** Default retention (keep 1,000 completed) ÷ the inline drain. */
  retention: 0.9,
  /** 2 or 4 worker processes together ÷ one. */
  procs: 0.9,
  /** Inline drain on a 3-server ensemble ÷ on the standalone server. */
  ensemble: 0.6,
  /** The large backlog's drain ÷ BullMQ's. */
  backlog: 1.0,
  idleP50Ms: 1.5,
  idleP99Ms: 5,
  workerCpuUs: 120,
  serverCpuUs: 120,
  herdIdlePerSec: 50,
  herdPerJob: 30,
} as const;

/** Scenarios whose rates zkq is compared with on both Redis systems. */
const VERSUS_BULLMQ = ['drain', 'e2e', 'addBulk', 'add', 'retention', 'procs2', 'procs4'];
/** Scenarios compared with zkq's own inline drain. */
const VERSUS_INLINE = ['threads', 'retention', 'procs2', 'procs4'];

/**
 * Ratios of one run: `ratio.<scenario>` zkq ÷ BullMQ (Redis without persistence),
 * `ratio.<scenario>.fsync` zkq ÷ BullMQ on Redis fsync always, `ratio.<scenario>.ofInline` zkq ÷
 * zkq's inline drain, `ratio.ensemble.ofStandalone`, and `ratio.backlog` (the backlogs' drains).
 */
export function withRatios(m: Metrics): Metrics {
  const out: Metrics = { ...m };
  const put = (key: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b) out[`ratio.${key}`] = Math.round((a / b) * 1000) / 1000;
  };
  for (const k of VERSUS_BULLMQ) {
    put(k, m[`zkq.${k}.rate`], m[`bullmq.${k}.rate`]);
    put(`${k}.fsync`, m[`zkq.${k}.rate`], m[`bullmq-fsync.${k}.rate`]);
  }
  for (const k of VERSUS_INLINE) put(`${k}.ofInline`, m[`zkq.${k}.rate`], m['zkq.drain.rate']);
  put('ensemble', m['zkq.ensemble.rate'], m['bullmq.drain.rate']);
  put('ensemble.fsync', m['zkq.ensemble.rate'], m['bullmq-fsync.drain.rate']);
  put('ensemble.ofStandalone', m['zkq.ensemble.rate'], m['zkq.drain.rate']);
  put('backlog', m['zkq.backlog.drainRate'], m['bullmq.backlog.drainRate']);
  return out;
}

export interface TargetOptions {
  concurrency: number;
  herdWorkers: number;
}

export interface Target {
  name: string;
  goal: string;
  zkq: string;
  /** BullMQ on Redis without persistence. */
  bullmq: string;
  /** BullMQ on Redis with appendfsync always, and zkq ÷ it where both ran. */
  fsync: string;
  raw: string;
  /** The figure the goal is about, and whether it meets the goal (undefined: not measured). */
  checked: string;
  pass: boolean | undefined;
}

type Fig = (n: number | undefined) => string;

const per =
  (unit: string, digits = 0): Fig =>
  (n) =>
    n === undefined ? '-' : `${fmt(n, digits)} ${unit}`;
const jobsPerSec = per('jobs/s');
const ms = per('ms', 2);
const us = per('µs');

/** A goal's factor: 1 → "1.0×", 0.85 → "0.85×". */
const factor = (n: number) => `${Number.isInteger(n) ? n.toFixed(1) : String(n)}×`;

/** Two decimals, three where two would show the goal itself for a ratio that misses it. */
const x = (r: number | undefined, goal?: number) =>
  r === undefined ? '-' : `${fmt(r, fmt(r, 2) === fmt(goal, 2) && r !== goal ? 3 : 2)}×`;

/** Every target of a run's (median) figures, ratios included. */
export function targets(m: Metrics, o: TargetOptions): Target[] {
  const v = (k: string): number | undefined => (Number.isFinite(m[k]) ? m[k] : undefined);
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? a / b : undefined);
  const atLeast = (r: number | undefined, min: number) => ({
    checked: x(r, min),
    pass: r === undefined ? undefined : r >= min,
  });
  /** BullMQ on Redis fsync always: its figure, and zkq's ratio to it where there is one. */
  const fsyncOf = (fig: Fig, key: string, r?: number) => {
    const n = v(`bullmq-fsync.${key}`);
    return n === undefined ? '-' : r === undefined ? fig(n) : `${fig(n)} (${x(r)})`;
  };

  const multi8 = v('raw.multiCreate8');
  const drainBound =
    multi8 && `≤ ${fmt(multi8 / WRITES_PER_DRAINED_JOB)} (${fmt(multi8)} nodes/s ÷ ${WRITES_PER_DRAINED_JOB})`;
  const bulkBound =
    multi8 && `≤ ${fmt(multi8 / NODES_PER_ENQUEUED_JOB)} (${fmt(multi8)} nodes/s ÷ ${NODES_PER_ENQUEUED_JOB})`;
  const addBound = v('raw.creates') && `≤ ${fmt(v('raw.creates'))} (pipelined creates/s)`;
  const cpuNode = v('raw.cpuUsPerMultiNode');
  const cpuBound =
    cpuNode && `≥ ${fmt(cpuNode * WRITES_PER_DRAINED_JOB)} (${fmt(cpuNode)} µs/node × ${WRITES_PER_DRAINED_JOB})`;
  const lat = (p: string) => v(`raw.latency${p}`) && `${fmt(v(`raw.latency${p}`), 2)} ms (one create)`;

  /** zkq ÷ BullMQ on one of the Redis systems, for scenario `scen`. */
  const vs = (scen: string, min: number, against: 'bullmq' | 'bullmq-fsync', bound?: string | 0) => {
    const key = `${scen}.rate`;
    const toPlain = v(`ratio.${scen}`) ?? ratio(v(`zkq.${key}`), v(`bullmq.${key}`));
    const toFsync = v(`ratio.${scen}.fsync`) ?? ratio(v(`zkq.${key}`), v(`bullmq-fsync.${key}`));
    return {
      zkq: jobsPerSec(v(`zkq.${key}`)),
      bullmq: jobsPerSec(v(`bullmq.${key}`)),
      fsync: fsyncOf(jobsPerSec, key, toFsync),
      raw: bound || '',
      ...atLeast(against === 'bullmq' ? toPlain : toFsync, min),
    };
  };
  /** zkq ÷ zkq's own inline drain on the standalone server. */
  const self = (scen: string, min: number, suffix = 'ofInline') => ({
    zkq: jobsPerSec(v(`zkq.${scen}.rate`)),
    fsync: '',
    raw: '',
    ...atLeast(v(`ratio.${scen}.${suffix}`) ?? ratio(v(`zkq.${scen}.rate`), v('zkq.drain.rate')), min),
  });
  const atMost = (key: string, goal: number, fig: Fig, strict = false) => {
    const n = v(`zkq.${key}`);
    return { zkq: fig(n), checked: fig(n), pass: n === undefined ? undefined : strict ? n < goal : n <= goal };
  };
  const listing = v('zkq.backlog.maxListing');
  const backlogJobs = v('zkq.backlog.jobs') ?? v('bullmq.backlog.jobs');
  const backlogName = `backlog${backlogJobs ? ` of ${fmt(backlogJobs)}` : ''}`;
  const notRun = 'not run: --backlog N';
  const backlogRatio = v('ratio.backlog') ?? ratio(v('zkq.backlog.drainRate'), v('bullmq.backlog.drainRate'));

  return [
    {
      name: `drain, inline (c=${o.concurrency})`,
      goal: `≥ ${factor(GOALS.drain)} BullMQ`,
      ...vs('drain', GOALS.drain, 'bullmq', drainBound),
    },
    {
      name: `drain, inline (c=${o.concurrency}), against Redis fsync always`,
      goal: `≥ ${factor(GOALS.drainFsync)} BullMQ, fsync always`,
      ...vs('drain', GOALS.drainFsync, 'bullmq-fsync', drainBound),
    },
    {
      name: 'end to end (first add → last completion)',
      goal: `≥ ${factor(GOALS.e2e)} BullMQ`,
      ...vs('e2e', GOALS.e2e, 'bullmq', drainBound),
    },
    {
      name: 'drain, file processor on piscina threads',
      goal: `≥ ${factor(GOALS.threads)} inline`,
      bullmq: 'n/a (sandbox differs)',
      ...self('threads', GOALS.threads),
    },
    {
      name: 'default retention (keep 1,000 completed)',
      goal: `≥ ${factor(GOALS.retention)} removeOnComplete`,
      bullmq: jobsPerSec(v('bullmq.retention.rate')),
      ...self('retention', GOALS.retention),
    },
    {
      name: `addBulk × ${fmt(1000)}`,
      goal: `≥ ${factor(GOALS.addBulk)} BullMQ`,
      ...vs('addBulk', GOALS.addBulk, 'bullmq', bulkBound),
    },
    {
      name: 'pipelined single add',
      goal: `≥ ${factor(GOALS.add)} BullMQ`,
      ...vs('add', GOALS.add, 'bullmq', addBound),
    },
    {
      name: 'idle add → processor start, p50',
      goal: `≤ ${GOALS.idleP50Ms} ms`,
      bullmq: ms(v('bullmq.idle.p50')),
      fsync: fsyncOf(ms, 'idle.p50'),
      raw: lat('P50') || '',
      ...atMost('idle.p50', GOALS.idleP50Ms, ms),
    },
    {
      name: 'idle add → processor start, p99',
      goal: `≤ ${GOALS.idleP99Ms} ms`,
      bullmq: ms(v('bullmq.idle.p99')),
      fsync: fsyncOf(ms, 'idle.p99'),
      raw: lat('P99') || '',
      ...atMost('idle.p99', GOALS.idleP99Ms, ms),
    },
    {
      name: 'drain, inline, 3-server ensemble',
      goal: `≥ ${factor(GOALS.ensemble)} standalone`,
      bullmq: jobsPerSec(v('bullmq.drain.rate')),
      ...self('ensemble', GOALS.ensemble, 'ofStandalone'),
      fsync: fsyncOf(jobsPerSec, 'drain.rate', v('ratio.ensemble.fsync')),
    },
    {
      name: `${backlogName}: drain`,
      goal: `≥ ${factor(GOALS.backlog)} BullMQ`,
      zkq: backlogJobs === undefined ? notRun : jobsPerSec(v('zkq.backlog.drainRate')),
      bullmq: jobsPerSec(v('bullmq.backlog.drainRate')),
      fsync: '',
      raw: '',
      ...atLeast(backlogRatio, GOALS.backlog),
    },
    {
      name: 'CPU per job (inline drain), worker',
      goal: `≤ ${GOALS.workerCpuUs} µs`,
      bullmq: us(v('bullmq.drain.workerCpuUs')),
      fsync: fsyncOf(us, 'drain.workerCpuUs'),
      raw: '',
      ...atMost('drain.workerCpuUs', GOALS.workerCpuUs, us),
    },
    {
      name: 'CPU per job (inline drain), server',
      goal: `≤ ${GOALS.serverCpuUs} µs`,
      bullmq: v('bullmq.drain.serverCpuUs') === undefined ? '-' : `${us(v('bullmq.drain.serverCpuUs'))} (Redis)`,
      fsync: fsyncOf(us, 'drain.serverCpuUs'),
      raw: cpuBound || '',
      ...atMost('drain.serverCpuUs', GOALS.serverCpuUs, us),
    },
    {
      name: '2 worker processes, total',
      goal: `≥ ${factor(GOALS.procs)} one`,
      bullmq: jobsPerSec(v('bullmq.procs2.rate')),
      ...self('procs2', GOALS.procs),
    },
    {
      name: '4 worker processes, total',
      goal: `≥ ${factor(GOALS.procs)} one`,
      bullmq: jobsPerSec(v('bullmq.procs4.rate')),
      ...self('procs4', GOALS.procs),
    },
    {
      name: `herd: ${o.herdWorkers} idle workers, idle`,
      goal: `< ${GOALS.herdIdlePerSec} packets/s`,
      bullmq: per('commands/s')(v('bullmq.herd.idlePerSec')),
      fsync: '',
      raw: '',
      ...atMost('herd.idlePerSec', GOALS.herdIdlePerSec, per('packets/s'), true),
    },
    {
      name: `herd: ${o.herdWorkers} idle workers, per job added`,
      goal: `≤ ${GOALS.herdPerJob} packets`,
      bullmq: per('commands')(v('bullmq.herd.perJob')),
      fsync: '',
      raw: '',
      ...atMost('herd.perJob', GOALS.herdPerJob, per('packets')),
    },
    {
      name: `${backlogName}: largest listing`,
      goal: `≤ one bucket (${fmt(BUCKET_CAPACITY)})`,
      zkq: listing === undefined ? notRun : `${fmt(listing)} names`,
      bullmq: '',
      fsync: '',
      raw: '',
      checked: listing === undefined ? '-' : fmt(listing),
      pass: listing === undefined ? undefined : listing <= BUCKET_CAPACITY,
    },
  ];
}

/** The targets as a table, with PASS / MISS (n/a: not measured in this run). */
export function targetTable(rows: Target[]): string {
  return table([
    ['target', 'goal', 'zkq', 'BullMQ', 'BullMQ, Redis fsync always', 'raw ZooKeeper, same run', 'checked', ''],
    ...rows.map((t) => [
      t.name,
      t.goal,
      t.zkq,
      t.bullmq,
      t.fsync,
      t.raw,
      t.checked,
      t.pass === undefined ? 'n/a' : t.pass ? 'PASS' : 'MISS',
    ]),
  ]);
}
