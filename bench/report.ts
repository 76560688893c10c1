/**
 * The benchmark's report: every figure of zkq beside BullMQ's and the raw
 * ZooKeeper limit of the same run, then the targets with PASS / MISS.
 */
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { fmt, median, table } from './lib.js';
import type { Metrics } from './scenarios.js';
import type { TraceEntry } from './worker-child.js';

/** Node writes of one drained job with removeOnComplete: claim (claim node, record) and finish (record, pointer, claim). */
export const WRITES_PER_DRAINED_JOB = 5;
/** Nodes an enqueued job creates: its record and its pointer. */
export const NODES_PER_ENQUEUED_JOB = 2;

/**
 * Ratios, per run (figures of one run are compared with each other, then the
 * median taken): `ratio.<scenario>` zkq / BullMQ, `ratio.<scenario>.ofInline`
 * zkq / zkq's inline drain.
 */
export function withRatios(m: Metrics): Metrics {
  const out: Metrics = { ...m };
  const put = (key: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b) out[`ratio.${key}`] = Math.round((a / b) * 1000) / 1000;
  };
  for (const k of ['drain', 'e2e', 'addBulk', 'add', 'retention', 'procs2', 'procs4']) {
    put(k, m[`zkq.${k}.rate`], m[`bullmq.${k}.rate`]);
  }
  for (const k of ['threads', 'retention', 'procs2', 'procs4'])
    put(`${k}.ofInline`, m[`zkq.${k}.rate`], m['zkq.drain.rate']);
  return out;
}

export interface ReportOptions {
  jobs: number;
  concurrency: number;
  addInFlight: number;
  herdWorkers: number;
}

interface Target {
  name: string;
  goal: string;
  zkq: string;
  bullmq: string;
  raw: string;
  /** The figure the goal is about, and whether it meets the goal (undefined: not measured). */
  checked: string;
  pass: boolean | undefined;
}

export function report(m: Metrics, o: ReportOptions): string {
  const v = (k: string): number | undefined => (Number.isFinite(m[k]) ? m[k] : undefined);
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? a / b : undefined);
  // Two decimals, three where two would show the goal itself for a ratio that misses it.
  const x = (r: number | undefined, goal?: number) =>
    r === undefined ? '-' : `${fmt(r, fmt(r, 2) === fmt(goal, 2) && r !== goal ? 3 : 2)}×`;
  const per =
    (unit: string, digits = 0) =>
    (n: number | undefined) =>
      n === undefined ? '-' : `${fmt(n, digits)} ${unit}`;
  const jobsPerSec = per('jobs/s');
  const ms = per('ms', 2);
  const us = per('µs');

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

  const vs = (key: string, fig: (n: number | undefined) => string, min: number, bound?: string | 0) => {
    const r = v(`ratio.${key.split('.')[0]}`) ?? ratio(v(`zkq.${key}`), v(`bullmq.${key}`));
    return {
      zkq: fig(v(`zkq.${key}`)),
      bullmq: fig(v(`bullmq.${key}`)),
      raw: bound || '',
      checked: x(r, min),
      pass: r === undefined ? undefined : r >= min,
    };
  };
  const self = (key: string, base: string, min: number, fig = jobsPerSec) => {
    const r = v(`ratio.${key.split('.')[0]}.ofInline`) ?? ratio(v(`zkq.${key}`), v(`zkq.${base}`));
    return { zkq: fig(v(`zkq.${key}`)), checked: x(r, min), pass: r === undefined ? undefined : r >= min };
  };
  const atMost = (key: string, goal: number, fig: (n: number | undefined) => string, strict = false) => {
    const n = v(`zkq.${key}`);
    return { zkq: fig(n), checked: fig(n), pass: n === undefined ? undefined : strict ? n < goal : n <= goal };
  };
  const listing = v('zkq.backlog.maxListing');

  const targets: Target[] = [
    {
      name: `drain, inline (c=${o.concurrency})`,
      goal: '≥ 1.0× BullMQ',
      ...vs('drain.rate', jobsPerSec, 1.0, drainBound),
    },
    {
      name: 'end to end (first add → last completion)',
      goal: '≥ 1.0× BullMQ',
      ...vs('e2e.rate', jobsPerSec, 1.0, drainBound),
    },
    {
      name: 'drain, file processor on piscina threads',
      goal: '≥ 0.8× inline',
      bullmq: 'n/a (sandbox differs)',
      raw: '',
      ...self('threads.rate', 'drain.rate', 0.8),
    },
    {
      name: 'default retention (keep 1,000 completed)',
      goal: '≥ 0.9× removeOnComplete',
      bullmq: jobsPerSec(v('bullmq.retention.rate')),
      raw: '',
      ...self('retention.rate', 'drain.rate', 0.9),
    },
    { name: `addBulk × ${fmt(1000)}`, goal: '≥ 1.5× BullMQ', ...vs('addBulk.rate', jobsPerSec, 1.5, bulkBound) },
    { name: 'pipelined single add', goal: '≥ 1.0× BullMQ', ...vs('add.rate', jobsPerSec, 1.0, addBound) },
    {
      name: 'idle add → processor start, p50',
      goal: '≤ 2.5 ms',
      bullmq: ms(v('bullmq.idle.p50')),
      raw: lat('P50') || '',
      ...atMost('idle.p50', 2.5, ms),
    },
    {
      name: 'idle add → processor start, p99',
      goal: '≤ 8 ms',
      bullmq: ms(v('bullmq.idle.p99')),
      raw: lat('P99') || '',
      ...atMost('idle.p99', 8, ms),
    },
    {
      name: 'CPU per job (inline drain), worker',
      goal: '≤ 120 µs',
      bullmq: us(v('bullmq.drain.workerCpuUs')),
      raw: '',
      ...atMost('drain.workerCpuUs', 120, us),
    },
    {
      name: 'CPU per job (inline drain), server',
      goal: '≤ 120 µs',
      bullmq: v('bullmq.drain.serverCpuUs') === undefined ? '-' : `${us(v('bullmq.drain.serverCpuUs'))} (Redis)`,
      raw: cpuBound || '',
      ...atMost('drain.serverCpuUs', 120, us),
    },
    {
      name: '2 worker processes, total',
      goal: '≥ 0.9× one',
      bullmq: jobsPerSec(v('bullmq.procs2.rate')),
      raw: '',
      ...self('procs2.rate', 'drain.rate', 0.9),
    },
    {
      name: '4 worker processes, total',
      goal: '≥ 0.9× one',
      bullmq: jobsPerSec(v('bullmq.procs4.rate')),
      raw: '',
      ...self('procs4.rate', 'drain.rate', 0.9),
    },
    {
      name: `herd: ${o.herdWorkers} idle workers, idle`,
      goal: '< 50 packets/s',
      bullmq: per('commands/s')(v('bullmq.herd.idlePerSec')),
      raw: '',
      ...atMost('herd.idlePerSec', 50, per('packets/s'), true),
    },
    {
      name: `herd: ${o.herdWorkers} idle workers, per job added`,
      goal: '≤ 30 packets',
      bullmq: per('commands')(v('bullmq.herd.perJob')),
      raw: '',
      ...atMost('herd.perJob', 30, per('packets')),
    },
    {
      name: `backlog${v('zkq.backlog.jobs') ? ` of ${fmt(v('zkq.backlog.jobs'))}` : ''}: largest listing`,
      goal: `≤ one bucket (${fmt(BUCKET_CAPACITY)})`,
      zkq: listing === undefined ? 'not run: --backlog N' : `${fmt(listing)} names`,
      bullmq: '',
      raw: '',
      checked: listing === undefined ? '-' : fmt(listing),
      pass: listing === undefined ? undefined : listing <= BUCKET_CAPACITY,
    },
  ];

  const out: string[] = [];
  if (v('raw.creates') !== undefined) {
    out.push(
      table([
        ['raw ZooKeeper (zkq Session, one session)', 'value'],
        ['single creates/s, 1000 in flight', fmt(v('raw.creates'))],
        ['single deletes/s, 1000 in flight', fmt(v('raw.deletes'))],
        ['multi(100) create nodes/s, 1 / 8 in flight', `${fmt(v('raw.multiCreate1'))} / ${fmt(multi8)}`],
        ['multi(100) delete nodes/s, 1 / 8 in flight', `${fmt(v('raw.multiDelete1'))} / ${fmt(v('raw.multiDelete8'))}`],
        ['server CPU µs per node, single / multi', `${fmt(v('raw.cpuUsPerCreate'))} / ${fmt(cpuNode)}`],
        ['one create, latency p50 / p99 ms', `${fmt(v('raw.latencyP50'), 2)} / ${fmt(v('raw.latencyP99'), 2)}`],
      ]),
      '',
    );
  }
  out.push(detail(m));
  const herd = herdLine(m);
  if (herd) out.push('', herd);
  const backlog = backlogLines(m);
  if (backlog) out.push('', backlog);
  out.push(
    '',
    table([
      ['target', 'goal', 'zkq', 'BullMQ', 'raw ZooKeeper, same run', 'checked', ''],
      ...targets.map((t) => [
        t.name,
        t.goal,
        t.zkq,
        t.bullmq,
        t.raw,
        t.checked,
        t.pass === undefined ? 'n/a' : t.pass ? 'PASS' : 'MISS',
      ]),
    ]),
  );
  return out.join('\n');
}

const SCENARIOS: [string, string][] = [
  ['addBulk', 'enqueue: addBulk × 1,000'],
  ['add', 'enqueue: pipelined add'],
  ['drain', 'drain, inline'],
  ['threads', 'drain, piscina threads'],
  ['e2e', 'end to end'],
  ['retention', 'drain, keep 1,000 completed'],
  ['procs2', 'drain, 2 processes'],
  ['procs4', 'drain, 4 processes'],
  ['retry', 'drain, attempts 3, first fails'],
  ['priority', 'drain, half prioritized'],
  ['events', 'drain, QueueEvents listening'],
];

/** One row per scenario and system: rate, start, CPU per job, server cost. */
function detail(m: Metrics): string {
  const rows = [
    [
      'scenario',
      'system',
      'jobs/s',
      '÷ BullMQ',
      'first ms',
      'worker µs/job',
      'worker CPU',
      'server µs/job',
      'tx/job',
      'req/job',
    ],
  ];
  const f = (n: number | undefined, digits = 0) => (n === undefined ? '' : fmt(n, digits));
  const labels: Record<string, string> = { zkq: 'zkq', bullmq: 'BullMQ', 'bullmq-zk': 'BullMQ on ZooKeeper' };
  for (const [key, label] of SCENARIOS) {
    for (const sys of ['zkq', 'bullmq', 'bullmq-zk']) {
      const g = (f: string) => m[`${sys}.${key}.${f}`];
      if (g('rate') === undefined) continue;
      // The per-run ratio's median where the runs compared zkq with BullMQ.
      const bull = m[`bullmq.${key}.rate`];
      const r =
        sys === 'bullmq' || !bull
          ? undefined
          : sys === 'zkq'
            ? (m[`ratio.${key}`] ?? (g('rate') as number) / bull)
            : (g('rate') as number) / bull;
      rows.push([
        label,
        labels[sys] as string,
        fmt(g('rate')),
        r === undefined ? '' : `${fmt(r, 2)}×`,
        f(g('firstMs')),
        f(g('workerCpuUs')),
        g('workerShare') === undefined ? '' : `${Math.round((g('workerShare') as number) * 100)}%`,
        f(g('serverCpuUs')),
        f(g('txPerJob'), 3),
        sys !== 'bullmq' ? f(g('reqPerJob'), 2) : g('cmdPerJob') === undefined ? '' : `${fmt(g('cmdPerJob'), 2)} cmd`,
      ]);
    }
  }
  const idle = (sys: string) =>
    m[`${sys}.idle.p50`] === undefined
      ? undefined
      : `${fmt(m[`${sys}.idle.p50`], 2)} / ${fmt(m[`${sys}.idle.p90`], 2)} / ${fmt(m[`${sys}.idle.p99`], 2)} / ${fmt(m[`${sys}.idle.max`], 1)} ms (add() itself p50 ${fmt(m[`${sys}.idle.addP50`], 2)}, p99 ${fmt(m[`${sys}.idle.addP99`], 2)})`;
  const lines = [table(rows)];
  for (const sys of ['zkq', 'bullmq']) {
    const text = idle(sys);
    if (text)
      lines.push(`idle add → processor start, ${sys === 'zkq' ? 'zkq' : 'BullMQ'} p50 / p90 / p99 / max: ${text}`);
  }
  return lines.join('\n');
}

function herdLine(m: Metrics): string | undefined {
  const parts: string[] = [];
  if (m['zkq.herd.idlePerSec'] !== undefined) {
    parts.push(
      `herd, zkq: idle ${fmt(m['zkq.herd.idlePerSec'], 1)} packets/s (received ${fmt(m['zkq.herd.idleReceivedPerSec'], 1)}, sent ${fmt(m['zkq.herd.idleSentPerSec'], 1)}); ` +
        `per job added ${fmt(m['zkq.herd.perJob'], 1)} packets beyond idle (all traffic: received ${fmt(m['zkq.herd.receivedPerJob'], 1)}, sent ${fmt(m['zkq.herd.sentPerJob'], 1)}); ` +
        `a worker's first job: ${fmt(m['zkq.herd.firstPerJob'], 1)}`,
    );
  }
  if (m['bullmq.herd.idlePerSec'] !== undefined) {
    parts.push(
      `herd, BullMQ: idle ${fmt(m['bullmq.herd.idlePerSec'], 1)} Redis commands/s; per job added ${fmt(m['bullmq.herd.perJob'], 1)} commands beyond idle`,
    );
  }
  return parts.length ? parts.join('\n') : undefined;
}

function backlogLines(m: Metrics): string | undefined {
  const z = (k: string) => m[`zkq.backlog.${k}`];
  const b = (k: string) => m[`bullmq.backlog.${k}`];
  const parts: string[] = [];
  if (z('jobs') !== undefined) {
    parts.push(
      `backlog, zkq: ${fmt(z('jobs'))} jobs, addBulk ${fmt(z('addRate'))} jobs/s, drain ${fmt(z('drainRate'))} jobs/s; ` +
        `largest listing ${fmt(z('maxListing'))} names (bucket ${fmt(BUCKET_CAPACITY)}); ` +
        `started out of order: ${fmt(z('startedLate'))} jobs, at most ${fmt(z('maxBehind'))} places\n` +
        `  ZooKeeper with the backlog: ${fmt(z('znodes'))} znodes, ${fmt(z('dataMb'), 1)} MiB of data, live heap ${fmt(z('heapMb'))} MiB, ` +
        `resident ${fmt(z('rssMb'))} MiB, snapshot ${fmt(z('snapshotMb'), 1)} MiB, restart ${fmt(z('restartMs'))} ms`,
    );
  }
  if (b('jobs') !== undefined) {
    parts.push(
      `backlog, BullMQ: ${fmt(b('jobs'))} jobs, addBulk ${fmt(b('addRate'))} jobs/s, drain ${fmt(b('drainRate'))} jobs/s; ` +
        `started out of order: ${fmt(b('startedLate'))} jobs, at most ${fmt(b('maxBehind'))} places; Redis used memory ${fmt(b('memoryMb'))} MiB`,
    );
  }
  return parts.length ? parts.join('\n') : undefined;
}

/** Per-run values and their median, for the figures the targets use. */
export function spread(runs: Metrics[], median: Metrics): string {
  const keys = [
    'load',
    'zkq.addBulk.rate',
    'bullmq.addBulk.rate',
    'zkq.add.rate',
    'bullmq.add.rate',
    'zkq.drain.rate',
    'bullmq.drain.rate',
    'zkq.threads.rate',
    'zkq.e2e.rate',
    'bullmq.e2e.rate',
    'zkq.retention.rate',
    'zkq.procs2.rate',
    'zkq.procs4.rate',
    'zkq.idle.p50',
    'bullmq.idle.p50',
    'zkq.idle.p99',
    'bullmq.idle.p99',
    'zkq.drain.workerCpuUs',
    'zkq.drain.serverCpuUs',
    'zkq.herd.idlePerSec',
    'zkq.herd.perJob',
    'zkq.herd.firstPerJob',
    'ratio.drain',
    'ratio.e2e',
    'ratio.addBulk',
    'ratio.add',
    'ratio.threads.ofInline',
    'ratio.retention.ofInline',
    'ratio.procs2.ofInline',
    'ratio.procs4.ofInline',
  ].filter((k) => median[k] !== undefined);
  return table([
    ['figure', ...runs.map((_, i) => `run ${i + 1}`), 'median'],
    ...keys.map((k) => {
      const digits = k.startsWith('ratio.') ? 2 : k === 'load' || k.includes('.idle.') || k.includes('.herd.') ? 1 : 0;
      return [k, ...runs.map((r) => fmt(r[k], digits)), fmt(median[k], digits)];
    }),
  ]);
}

/** The whole report of some runs: the median of each figure (ratios taken per run first). */
export function render(
  runs: Metrics[],
  traces: Record<string, Record<string, TraceEntry>>,
  o: ReportOptions,
): { text: string; median: Metrics } {
  const perRun = runs.map(withRatios);
  const keys = [...new Set(perRun.flatMap((m) => Object.keys(m)))];
  const med: Metrics = Object.fromEntries(keys.map((k) => [k, median(perRun.map((m) => m[k] ?? Number.NaN))]));
  const out: string[] = [
    '',
    `${runs.length > 1 ? `median of ${runs.length} runs; ` : ''}${fmt(o.jobs)} no-op jobs, 100-byte data, ` +
      `removeOnComplete unless said, one Worker per process at concurrency ${o.concurrency}; ` +
      'ZooKeeper standalone fsync on; Redis without persistence',
    '',
    report(med, o),
  ];
  if (runs.length > 1) out.push('', spread(perRun, med));
  for (const [name, t] of Object.entries(traces)) {
    const rows = [
      [
        `${name}: requests of the first worker process (last run)`,
        'calls',
        'per job',
        'ops/call',
        'mean ms',
        'max pending',
      ],
    ];
    for (const [kind, e] of Object.entries(t)) {
      if (e.calls === 0) continue;
      const perJob = fmt(e.calls / o.jobs, 3);
      rows.push([kind, fmt(e.calls), perJob, fmt(e.ops / e.calls, 1), fmt(e.meanMs, 2), fmt(e.maxPending)]);
    }
    out.push('', table(rows));
    const [write, read] = [med[`${name}.serverWriteMs`], med[`${name}.serverReadMs`]];
    if (write !== undefined && read !== undefined) {
      out.push(
        `ZooKeeper's own mean time per request in this scenario (mntr): writes ${fmt(write, 2)} ms, reads ${fmt(read, 2)} ms`,
      );
    }
  }
  return { text: out.join('\n'), median: med };
}
