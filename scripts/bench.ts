/**
 * zkq's benchmark: starts its own ZooKeeper (fsync on), measures the raw
 * limits of the server through zkq's Session, then zkq itself, and prints
 * every zkq figure beside the raw limit measured in the same run.
 *
 *   npm run bench                                   everything (~2-3 minutes)
 *   npm run bench -- --only raw,drain               some sections: raw, add, drain, latency, options
 *   npm run bench -- --jobs 50000 --concurrency 100 bigger drain
 *   npm run bench -- --only drain --profile         V8 CPU profiles of the worker processes
 *   npm run bench -- --only drain --trace           count and time the worker's ZooKeeper requests
 *   npm run bench -- --zk 127.0.0.1:2181 [--zk-pid N] an existing server instead of a fresh one (pid: its CPU time)
 *
 * Results also go to bench/results/latest.json. See docs/benchmarks.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startZooKeeper } from '@zkq/testing';
import { fmt, table } from '../bench/lib.js';
import { measureRaw, type RawResults } from '../bench/raw.js';
import {
  type BenchEnv,
  benchAdd,
  benchAddBulk,
  benchDrain,
  benchLatency,
  cpuMsOf,
  type DrainResult,
  type LatencyResult,
  type ProduceResult,
} from '../bench/scenarios.js';

const SECTIONS = ['raw', 'add', 'drain', 'latency', 'options'] as const;
type Section = (typeof SECTIONS)[number];

const { values: flags } = parseArgs({
  options: {
    only: { type: 'string' },
    jobs: { type: 'string', default: '20000' },
    'add-jobs': { type: 'string', default: '5000' },
    'add-in-flight': { type: 'string', default: '1000' },
    'bulk-jobs': { type: 'string', default: '20000' },
    'raw-nodes': { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    threads: { type: 'string' },
    samples: { type: 'string', default: '500' },
    spacing: { type: 'string', default: '5' },
    'latency-concurrency': { type: 'string', default: '4' },
    'option-jobs': { type: 'string', default: '10000' },
    profile: { type: 'boolean', default: false },
    trace: { type: 'boolean', default: false },
    zk: { type: 'string' },
    'zk-pid': { type: 'string' },
    out: { type: 'string' },
  },
});

const num = (name: keyof typeof flags): number => {
  const n = Number(flags[name]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
};
const only = new Set<Section>(
  flags.only
    ? flags.only.split(',').map((s) => {
        if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`--only: unknown section '${s}'`);
        return s as Section;
      })
    : SECTIONS,
);
const jobs = num('jobs');
const concurrency = num('concurrency');
const threads = flags.threads ? num('threads') : undefined;
const resultsDir = fileURLToPath(new URL('../bench/results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });

const started = Date.now();
const log = (msg: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

const server = flags.zk ? undefined : await startZooKeeper({ fsync: true });
const connectionString = flags.zk ?? (server?.connectionString as string);
const port = Number(connectionString.split(',')[0]?.split(':')[1]);
const env: BenchEnv = {
  connectionString,
  port,
  zkPid: server?.process.pid ?? (flags['zk-pid'] ? Number(flags['zk-pid']) : undefined),
  prefix: `bench-${Date.now().toString(36)}`,
  ...(flags.profile ? { profileDir: `${resultsDir}profiles` } : {}),
  ...(flags.trace ? { trace: true } : {}),
};
log(`zookeeper ${connectionString}${server ? ' (fresh, fsync on)' : ''}`);

let raw: RawResults | undefined;
let add: ProduceResult | undefined;
let bulk: ProduceResult | undefined;
const drains: Record<string, DrainResult> = {};
let latency: LatencyResult | undefined;

try {
  if (only.has('raw')) {
    log('raw limits (Session, one session, pipelined)');
    raw = await measureRaw(connectionString, {
      nodes: num('raw-nodes'),
      inFlight: 1000,
      multiSize: 100,
      serverCpuMs: () => cpuMsOf(env.zkPid),
    });
  }
  if (only.has('add')) {
    log('add, one job per call');
    add = await benchAdd(env, num('add-jobs'), num('add-in-flight'));
    log('addBulk');
    bulk = await benchAddBulk(env, num('bulk-jobs'));
  }
  const drain = async (o: Parameters<typeof benchDrain>[1]) => {
    log(`drain ${o.name}: ${o.jobs} jobs, ${o.processor} processor, concurrency ${o.concurrency}`);
    drains[o.name] = await benchDrain(env, o);
  };
  const base = { jobs, concurrency, ...(threads ? { threads } : {}) };
  if (only.has('drain')) {
    await drain({ ...base, name: 'drain-inline', processor: 'inline' });
    await drain({ ...base, name: 'drain-threaded', processor: 'threaded' });
  }
  if (only.has('latency')) {
    log('idle latency');
    latency = await benchLatency(env, num('samples'), num('spacing'), num('latency-concurrency'));
  }
  if (only.has('options')) {
    const optionJobs = num('option-jobs');
    await drain({
      ...base,
      jobs: optionJobs,
      name: 'drain-retry',
      processor: 'inline',
      behaviour: 'fail-first',
      jobOpts: () => ({ attempts: 3, backoff: { type: 'fixed', delay: 0 } }),
    });
    await drain({
      ...base,
      jobs: optionJobs,
      name: 'drain-priority',
      processor: 'inline',
      jobOpts: (i) => (i % 2 === 0 ? { priority: 1 + (i % 10) } : undefined),
    });
    await drain({
      ...base,
      jobs: optionJobs,
      name: 'drain-remove',
      processor: 'inline',
      jobOpts: () => ({ removeOnComplete: true }),
    });
    await drain({
      ...base,
      jobs: optionJobs,
      name: 'drain-events',
      processor: 'inline',
      jobOpts: () => ({ removeOnComplete: true }),
      listen: true,
    });
  }
} finally {
  await server?.stop();
}

// ---- report ----------------------------------------------------------------------

interface Target {
  name: string;
  value: number | undefined;
  goal: number;
  unit: string;
  higherIsBetter: boolean;
}
const targets: Target[] = [
  {
    name: 'drain, inline',
    value: drains['drain-inline']?.jobsPerSec,
    goal: 8000,
    unit: 'jobs/s',
    higherIsBetter: true,
  },
  {
    name: 'drain, threaded',
    value: drains['drain-threaded']?.jobsPerSec,
    goal: 8000,
    unit: 'jobs/s',
    higherIsBetter: true,
  },
  { name: 'addBulk', value: bulk?.jobsPerSec, goal: 20000, unit: 'jobs/s', higherIsBetter: true },
  { name: 'idle latency p99', value: latency?.p99, goal: 10, unit: 'ms', higherIsBetter: false },
];
const verdict = (t: Target) =>
  t.value === undefined ? 'n/a' : (t.higherIsBetter ? t.value >= t.goal : t.value <= t.goal) ? 'PASS' : 'MISS';

const pct = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !b ? '-' : `${Math.round((a / b) * 100)}%`;

const rows: string[][] = [['measurement', 'zkq', 'raw ZooKeeper, same run', 'ceiling', 'zkq/ceiling', 'tx/job']];
if (raw) {
  rows.push(
    ['raw: single creates/s, 1000 in flight', '', fmt(raw.createsPerSec), '', '', ''],
    ['raw: single deletes/s, 1000 in flight', '', fmt(raw.deletesPerSec), '', '', ''],
    ['raw: multi(100) create nodes/s, 1 in flight', '', fmt(raw.multiCreateNodesPerSec1), '', '', ''],
    ['raw: multi(100) create nodes/s, 8 in flight', '', fmt(raw.multiCreateNodesPerSec8), '', '', ''],
    ['raw: multi(100) delete nodes/s, 1 in flight', '', fmt(raw.multiDeleteNodesPerSec1), '', '', ''],
    ['raw: multi(100) delete nodes/s, 8 in flight', '', fmt(raw.multiDeleteNodesPerSec8), '', '', ''],
    [
      'raw: ZooKeeper CPU µs per create, single / multi',
      '',
      `${fmt(raw.serverCpuUsPerCreate)} / ${fmt(raw.serverCpuUsPerMultiCreate)}`,
      '',
      '',
      '',
    ],
    [
      'raw: one create, latency p50 / p99 ms',
      '',
      `${fmt(raw.createLatencyP50, 2)} / ${fmt(raw.createLatencyP99, 2)}`,
      '',
      '',
      '',
    ],
  );
}
// Ceilings: what the raw rate allows for zkq's write pattern on that path.
if (add) {
  // One 2-create multi per add, pipelined: at best one pipelined single write per job.
  const ceiling = raw?.createsPerSec;
  rows.push([
    `add jobs/s (${fmt(add.jobs)}, ${flags['add-in-flight']} in flight)`,
    fmt(add.jobsPerSec),
    raw ? `${fmt(raw.createsPerSec)} creates/s` : '-',
    fmt(ceiling),
    pct(add.jobsPerSec, ceiling),
    fmt(add.cost.txPerJob, 2),
  ]);
}
if (bulk) {
  // Two nodes per job in multis sent one at a time.
  const ceiling = raw ? raw.multiCreateNodesPerSec1 / 2 : undefined;
  rows.push([
    `addBulk jobs/s (${fmt(bulk.jobs)})`,
    fmt(bulk.jobsPerSec),
    raw ? `${fmt(raw.multiCreateNodesPerSec1)} nodes/s (multi, 1)` : '-',
    fmt(ceiling),
    pct(bulk.jobsPerSec, ceiling),
    fmt(bulk.cost.txPerJob, 3),
  ]);
}
// A drained job writes 6 nodes (claim: create claim + set record; finish: set record,
// delete pointer, delete claim, create completed pointer) and later 2 deletes (retention).
const drainCeiling = raw ? raw.multiCreateNodesPerSec8 / 6 : undefined;
for (const d of Object.values(drains)) {
  rows.push([
    `${d.name} jobs/s (${fmt(d.jobs)}, c=${concurrency})`,
    fmt(d.jobsPerSec),
    raw ? `${fmt(raw.multiCreateNodesPerSec8)} nodes/s (multi, 8)` : '-',
    fmt(drainCeiling),
    pct(d.jobsPerSec, drainCeiling),
    fmt(d.cost.txPerJob, 3),
  ]);
}
if (latency) {
  rows.push([
    `idle latency p50 / p99 / max ms (${latency.samples})`,
    `${fmt(latency.p50, 1)} / ${fmt(latency.p99, 1)} / ${fmt(latency.max, 1)}`,
    raw ? `${fmt(raw.createLatencyP50, 2)} / ${fmt(raw.createLatencyP99, 2)} per write` : '-',
    '',
    '',
    '',
  ]);
}

const detail: string[][] = [
  ['drain', 'steady jobs/s', 'ready ms', 'first ms', 'worker CPU', 'µs CPU/job', 'req/job', 'ZK CPU ms'],
];
for (const d of Object.values(drains)) {
  detail.push([
    d.name,
    fmt(d.steadyJobsPerSec),
    fmt(d.readyMs),
    fmt(d.firstMs),
    `${Math.round(d.workerCpuShare * 100)}%`,
    fmt(d.workerCpuUsPerJob),
    fmt(d.cost.requestsPerJob, 2),
    fmt(d.cost.zkCpuMs),
  ]);
}

const out: string[] = ['', table(rows)];
if (detail.length > 1) out.push('', table(detail));
const traced = [
  ...Object.values(drains),
  ...(latency ? [{ ...latency, name: 'latency', jobs: latency.samples + 1 }] : []),
];
for (const d of traced) {
  if (!d.trace) continue;
  const t: string[][] = [[`${d.name}: worker requests`, 'calls', 'per job', 'ops/call', 'mean ms', 'max pending']];
  for (const [kind, e] of Object.entries(d.trace)) {
    if (e.calls === 0) continue;
    t.push([
      kind,
      fmt(e.calls),
      fmt(e.calls / d.jobs, 3),
      fmt(e.ops / e.calls, 1),
      fmt(e.meanMs, 2),
      fmt(e.maxPending),
    ]);
  }
  out.push('', table(t));
}
if (latency) {
  out.push(
    '',
    `idle latency: ${latency.samples} jobs added one at a time ${latency.spacingMs} ms apart, worker concurrency ${latency.concurrency}; ` +
      `add-call start → processor start p50 ${fmt(latency.p50, 2)}, p90 ${fmt(latency.p90, 2)}, p99 ${fmt(latency.p99, 2)}, ` +
      `max ${fmt(latency.max, 2)} ms; add() itself p50 ${fmt(latency.addP50, 2)}, p99 ${fmt(latency.addP99, 2)} ms`,
  );
}
out.push(
  '',
  table([
    ['target', 'goal', 'measured', ''],
    ...targets.map((t) => [
      t.name,
      `${t.higherIsBetter ? '≥' : '≤'} ${fmt(t.goal)} ${t.unit}`,
      t.value === undefined ? '-' : `${fmt(t.value, t.unit === 'ms' ? 1 : 0)} ${t.unit}`,
      verdict(t),
    ]),
  ]),
);
const withEvents = drains['drain-events'];
const withoutEvents = drains['drain-remove'];
if (withEvents && withoutEvents) {
  out.push(
    '',
    `QueueEvents: drain with a listener ${fmt(withEvents.jobsPerSec)} jobs/s vs ${fmt(withoutEvents.jobsPerSec)} without ` +
      `(same options), ${fmt(withEvents.completedEvents ?? 0)} completed events received.`,
  );
}
out.push(
  `cpus: ${availableParallelism()} × ${cpus()[0]?.model ?? '?'}; node ${process.version}; total ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
console.log(out.join('\n'));

const json = {
  at: new Date(started).toISOString(),
  durationS: Math.round((Date.now() - started) / 1000),
  machine: { cpus: availableParallelism(), model: cpus()[0]?.model, node: process.version },
  options: { jobs, concurrency, threads, sections: [...only], addJobs: num('add-jobs'), bulkJobs: num('bulk-jobs') },
  raw,
  add,
  addBulk: bulk,
  drains,
  latency,
  targets: targets.map((t) => ({ ...t, verdict: verdict(t) })),
};
const outFile = flags.out ?? `${resultsDir}latest.json`;
writeFileSync(outFile, `${JSON.stringify(json, null, 2)}\n`);
log(`results written to ${outFile}`);
