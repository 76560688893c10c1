/**
 * The benchmark's report: every figure of zkq beside BullMQ's (on Redis
 * without persistence and with every write fsynced) and the raw ZooKeeper
 * limit of the same run, then the targets with PASS / MISS (`targets.ts`).
 */
import { BUCKET_CAPACITY } from '@zkq/core/internal';
import { fmt, median, table } from './lib.js';
import type { Metrics } from './scenarios.js';
import { type TargetOptions, targets, targetTable, withRatios } from './targets.js';
import type { TraceEntry } from './worker-child.js';

export interface ReportOptions extends TargetOptions {
  jobs: number;
  addInFlight: number;
}

export function report(m: Metrics, o: ReportOptions): string {
  const v = (k: string): number | undefined => (Number.isFinite(m[k]) ? m[k] : undefined);
  const multi8 = v('raw.multiCreate8');
  const cpuNode = v('raw.cpuUsPerMultiNode');
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
  out.push('', targetTable(targets(m, o)));
  return out.join('\n');
}

/** Scenarios of the detail table: metrics key, label, and the BullMQ scenario it is compared with. */
const SCENARIOS: [key: string, label: string, versus?: string][] = [
  ['addBulk', 'enqueue: addBulk × 1,000'],
  ['add', 'enqueue: pipelined add'],
  ['drain', 'drain, inline'],
  ['ensemble', 'drain, inline, 3-server ensemble', 'drain'],
  ['threads', 'drain, piscina threads'],
  ['e2e', 'end to end'],
  ['retention', 'drain, keep 1,000 completed'],
  ['procs2', 'drain, 2 processes'],
  ['procs4', 'drain, 4 processes'],
  ['retry', 'drain, attempts 3, first fails'],
  ['priority', 'drain, half prioritized'],
  ['events', 'drain, QueueEvents listening'],
];

const SYSTEMS: [name: string, label: string][] = [
  ['zkq', 'zkq'],
  ['bullmq', 'BullMQ'],
  ['bullmq-fsync', 'BullMQ, Redis fsync always'],
  ['bullmq-zk', 'BullMQ on ZooKeeper'],
];
const ON_REDIS = new Set(['bullmq', 'bullmq-fsync']);

/** One row per scenario and system: rate, against both Redis systems, start, CPU per job, server cost. */
function detail(m: Metrics): string {
  const rows = [
    [
      'scenario',
      'system',
      'jobs/s',
      '÷ BullMQ',
      '÷ fsync always',
      'first ms',
      'worker µs/job',
      'worker CPU',
      'server µs/job',
      'tx/job',
      'req/job',
    ],
  ];
  const f = (n: number | undefined, digits = 0) => (n === undefined ? '' : fmt(n, digits));
  for (const [key, label, versus = key] of SCENARIOS) {
    for (const [sys, sysLabel] of SYSTEMS) {
      const g = (f: string) => m[`${sys}.${key}.${f}`];
      const rate = g('rate');
      if (rate === undefined) continue;
      // zkq's: the median of the per-run ratios; the others' (and without one) of the medians
      const against = (redis: string, suffix: string) => {
        const base = m[`${redis}.${versus}.rate`];
        if (ON_REDIS.has(sys) || !base) return '';
        return `${fmt((sys === 'zkq' ? m[`ratio.${key}${suffix}`] : undefined) ?? rate / base, 2)}×`;
      };
      rows.push([
        label,
        sysLabel,
        fmt(rate),
        against('bullmq', ''),
        against('bullmq-fsync', '.fsync'),
        f(g('firstMs')),
        f(g('workerCpuUs')),
        g('workerShare') === undefined ? '' : `${Math.round((g('workerShare') as number) * 100)}%`,
        f(g('serverCpuUs')),
        f(g('txPerJob'), 3),
        !ON_REDIS.has(sys) ? f(g('reqPerJob'), 2) : g('cmdPerJob') === undefined ? '' : `${fmt(g('cmdPerJob'), 2)} cmd`,
      ]);
    }
  }
  const idle = (sys: string) =>
    m[`${sys}.idle.p50`] === undefined
      ? undefined
      : `${fmt(m[`${sys}.idle.p50`], 2)} / ${fmt(m[`${sys}.idle.p90`], 2)} / ${fmt(m[`${sys}.idle.p99`], 2)} / ${fmt(m[`${sys}.idle.max`], 1)} ms (add() itself p50 ${fmt(m[`${sys}.idle.addP50`], 2)}, p99 ${fmt(m[`${sys}.idle.addP99`], 2)})`;
  const lines = [table(rows)];
  for (const [sys, sysLabel] of SYSTEMS) {
    const text = idle(sys);
    if (text) lines.push(`idle add → processor start, ${sysLabel} p50 / p90 / p99 / max: ${text}`);
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
    'bullmq-fsync.addBulk.rate',
    'zkq.add.rate',
    'bullmq.add.rate',
    'bullmq-fsync.add.rate',
    'zkq.drain.rate',
    'bullmq.drain.rate',
    'bullmq-fsync.drain.rate',
    'zkq.ensemble.rate',
    'zkq.threads.rate',
    'zkq.e2e.rate',
    'bullmq.e2e.rate',
    'bullmq-fsync.e2e.rate',
    'zkq.retention.rate',
    'zkq.procs2.rate',
    'zkq.procs4.rate',
    'zkq.idle.p50',
    'bullmq.idle.p50',
    'bullmq-fsync.idle.p50',
    'zkq.idle.p99',
    'bullmq.idle.p99',
    'bullmq-fsync.idle.p99',
    'zkq.drain.workerCpuUs',
    'zkq.drain.serverCpuUs',
    'zkq.herd.idlePerSec',
    'zkq.herd.perJob',
    'zkq.herd.firstPerJob',
    'ratio.drain',
    'ratio.drain.fsync',
    'ratio.e2e',
    'ratio.e2e.fsync',
    'ratio.addBulk',
    'ratio.addBulk.fsync',
    'ratio.add',
    'ratio.add.fsync',
    'ratio.threads.ofInline',
    'ratio.retention.ofInline',
    'ratio.procs2.ofInline',
    'ratio.procs4.ofInline',
    'ratio.ensemble.ofStandalone',
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
  const servers = ['ZooKeeper standalone fsync on'];
  if (keys.some((k) => k.startsWith('zkq.ensemble.')))
    servers.push('a 3-server ensemble likewise for the ensemble row');
  servers.push(
    keys.some((k) => k.startsWith('bullmq-fsync.'))
      ? 'Redis without persistence and with appendfsync always (that column: its figure, then zkq ÷ it)'
      : 'Redis without persistence',
  );
  const out: string[] = [
    '',
    `${runs.length > 1 ? `median of ${runs.length} runs; ` : ''}${fmt(o.jobs)} no-op jobs, 100-byte data, ` +
      `removeOnComplete unless said, one Worker per process at concurrency ${o.concurrency}; ` +
      servers.join('; '),
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
