/**
 * Probe: layout 3's claim round and add, measured on the raw session before
 * the layout is built, beside today's and the raw ZooKeeper limits of the
 * same run (bench/raw.ts). One ZooKeeper (fsync on), zkq's own Session,
 * N jobs of ~100 bytes of data, 50 per claim round. See docs/layout-3.md.
 *
 *   npm run bench:layout3                      one run (about 30 s on 2 cores)
 *   npm run bench:layout3 -- --runs 3          the median of three runs
 *   npm run bench:layout3 -- --zk 127.0.0.1:2181 [--zk-pid N]   an existing server
 *   options: --jobs 20000 --batch 50 --bulk 1000 --raw-nodes 20000
 *
 * A measure to read, not a test: nothing is asserted. Results also go to
 * bench/results/layout3-probe.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Session } from '@zkq/core';
import { startZooKeeper } from '@zkq/testing';
import { addBulk, bodyOf, type Layout, leavesOf, type ProbeJob, ProbeQueue, todayRecord } from './layout3-jobs.js';
import { drain, type RoundStyle } from './layout3-rounds.js';
import { cpuMsOf, fmt, median, pipelined, rate, table, timed } from './lib.js';
import { measureRaw } from './raw.js';

const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '50' },
    bulk: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '1' },
    'raw-nodes': { type: 'string', default: '20000' },
    zk: { type: 'string' },
    'zk-pid': { type: 'string' },
    out: { type: 'string' },
  },
});
const num = (name: 'jobs' | 'batch' | 'bulk' | 'runs' | 'raw-nodes'): number => {
  const n = Number(flags[name]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer`);
  return n;
};
const jobs = num('jobs');
const batch = num('batch');
const bulk = num('bulk');
const runs = num('runs');

/** A claim measurement: a row of the table. */
interface ClaimCase {
  key: string;
  label: string;
  style: RoundStyle;
  lanes: number;
  sessions: number;
  finish: boolean;
}
const CLAIMS: ClaimCase[] = [
  { key: 'today', label: 'today: read, then claim', style: 'today', lanes: 1, sessions: 1, finish: false },
  {
    key: 'blind',
    label: "today's claim multi alone (no read)",
    style: 'today-blind',
    lanes: 1,
    sessions: 1,
    finish: false,
  },
  { key: 'set', label: 'layout 3: claim + setData, read beside', style: 'set', lanes: 1, sessions: 1, finish: false },
  {
    key: 'create',
    label: 'layout 3: claim create only, read beside',
    style: 'create',
    lanes: 1,
    sessions: 1,
    finish: false,
  },
  { key: 'today.drain', label: 'today, finishes beside', style: 'today', lanes: 1, sessions: 1, finish: true },
  { key: 'set.drain', label: 'layout 3 setData, finishes beside', style: 'set', lanes: 1, sessions: 1, finish: true },
  {
    key: 'create.drain',
    label: 'layout 3 create only, finishes beside',
    style: 'create',
    lanes: 1,
    sessions: 1,
    finish: true,
  },
  { key: 'today.drain.2', label: 'today, 2 rounds in flight', style: 'today', lanes: 2, sessions: 1, finish: true },
  {
    key: 'set.drain.2',
    label: 'layout 3 setData, 2 rounds in flight',
    style: 'set',
    lanes: 2,
    sessions: 1,
    finish: true,
  },
  {
    key: 'set.drain.4',
    label: 'layout 3 setData, 4 rounds in flight',
    style: 'set',
    lanes: 4,
    sessions: 1,
    finish: true,
  },
  {
    key: 'set.drain.s2',
    label: 'layout 3 setData, 2 sessions × 1 round',
    style: 'set',
    lanes: 1,
    sessions: 2,
    finish: true,
  },
  {
    key: 'set.drain.s2x2',
    label: 'layout 3 setData, 2 sessions × 2 rounds',
    style: 'set',
    lanes: 2,
    sessions: 2,
    finish: true,
  },
];
const ADDS: { key: string; label: string; layout: Layout; inFlight: number }[] = [
  { key: 'add.today.1', label: 'today: record + pointer, 1 call in flight', layout: 'today', inFlight: 1 },
  { key: 'add.l3.1', label: 'layout 3: one node per job, 1 call in flight', layout: 'l3', inFlight: 1 },
  { key: 'add.today.8', label: 'today: record + pointer, 8 calls in flight', layout: 'today', inFlight: 8 },
  { key: 'add.l3.8', label: 'layout 3: one node per job, 8 calls in flight', layout: 'l3', inFlight: 8 },
];

type Metrics = Record<string, number>;
const started = Date.now();
const log = (msg: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

const server = flags.zk ? undefined : await startZooKeeper({ fsync: true });
const connectionString = flags.zk ?? (server?.connectionString as string);
const zkPid = server?.process.pid ?? (flags['zk-pid'] ? Number(flags['zk-pid']) : undefined);
const namespace = `/bench-layout3-${started.toString(36)}`;
const connect = () => Session.connect({ connectionString, namespace, requestTimeout: 60_000 });
const sessions = [await connect(), await connect()];
const main = sessions[0] as Session;

/** Runs `fn` and measures it: elapsed ms, ZooKeeper's CPU and this process's, ms. */
async function measured(fn: () => Promise<unknown>): Promise<{ ms: number; serverMs: number; clientMs: number }> {
  const server0 = cpuMsOf(zkPid);
  const client0 = process.cpuUsage();
  const ms = await timed(fn);
  const client = process.cpuUsage(client0);
  return { ms, serverMs: cpuMsOf(zkPid) - server0, clientMs: (client.user + client.system) / 1000 };
}

/** Adds `count` jobs in calls of `bulk`, `inFlight` calls at once; resolves with them in order. */
async function addAll(q: ProbeQueue, count: number, inFlight: number, states = false): Promise<ProbeJob[]> {
  const calls: ProbeJob[][] = [];
  await pipelined(Math.ceil(count / bulk), inFlight, async (c) => {
    calls[c] = await addBulk(q, c * bulk, Math.min(bulk, count - c * bulk), states);
  });
  return calls.flat();
}

async function claimCase(c: ClaimCase, run: number, count: number, m?: Metrics): Promise<void> {
  const layout: Layout = c.style.startsWith('today') ? 'today' : 'l3';
  const name = `r${run}-${c.key.replaceAll('.', '-')}${m ? '' : '-warm'}`;
  const queues = sessions.slice(0, c.sessions).map((s) => new ProbeQueue(s, name, layout));
  const q = queues[0] as ProbeQueue;
  await q.create(count, c.style === 'set');
  const all = await addAll(q, count, 8, c.style === 'set');
  let rounds = 0;
  const t = await measured(async () => {
    rounds = await drain(all, { style: c.style, queues, lanes: c.lanes, batch, finish: c.finish });
  });
  const claimOps = queues.reduce((n, x) => n + x.claimOpsSent, 0);
  for (const other of queues.slice(1)) q.receipts.push(...other.receipts.splice(0));
  await q.remove(c.finish ? [] : leavesOf(q, all, true));
  if (!m) return;
  m[`${c.key}.rounds`] = rate(rounds, t.ms);
  m[`${c.key}.jobs`] = rate(count, t.ms);
  m[`${c.key}.msPerRound`] = (t.ms * c.lanes * c.sessions) / rounds;
  m[`${c.key}.claimOps`] = claimOps / rounds;
  m[`${c.key}.serverUs`] = (t.serverMs * 1000) / count;
  m[`${c.key}.clientUs`] = (t.clientMs * 1000) / count;
}

async function addCase(a: (typeof ADDS)[number], run: number, m: Metrics): Promise<void> {
  const q = new ProbeQueue(main, `r${run}-${a.key.replaceAll('.', '-')}`, a.layout);
  await q.create(jobs, false);
  let added: ProbeJob[] = [];
  const t = await measured(async () => {
    added = await addAll(q, jobs, a.inFlight);
  });
  await q.remove(leavesOf(q, added, false));
  m[`${a.key}.jobs`] = rate(jobs, t.ms);
  m[`${a.key}.serverUs`] = (t.serverMs * 1000) / jobs;
  m[`${a.key}.clientUs`] = (t.clientMs * 1000) / jobs;
}

async function oneRun(run: number): Promise<Metrics> {
  const m: Metrics = { load: Math.round((loadavg()[0] as number) * 10) / 10 };
  log(`run ${run}: raw ZooKeeper limits`);
  const r = await measureRaw(connectionString, {
    nodes: num('raw-nodes'),
    inFlight: 1000,
    multiSize: 100,
    serverCpuMs: () => cpuMsOf(zkPid),
  });
  Object.assign(m, {
    'raw.creates': r.createsPerSec,
    'raw.multiCreate1': r.multiCreateNodesPerSec1,
    'raw.multiCreate8': r.multiCreateNodesPerSec8,
    'raw.multiDelete8': r.multiDeleteNodesPerSec8,
    'raw.latencyP50': r.createLatencyP50,
    'raw.latencyP99': r.createLatencyP99,
  });
  if (run === 1) {
    log('warm-up: 2,000 jobs of each claim round');
    for (const c of CLAIMS.slice(0, 4)) await claimCase(c, run, Math.min(jobs, 2000));
  }
  for (const c of CLAIMS) {
    log(`run ${run}: ${c.label}`);
    await claimCase(c, run, jobs, m);
  }
  for (const a of ADDS) {
    log(`run ${run}: add, ${a.label}`);
    await addCase(a, run, m);
  }
  return m;
}

const perRun: Metrics[] = [];
try {
  for (let run = 1; run <= runs; run++) perRun.push(await oneRun(run));
} finally {
  await main.deleteRecursive('/').catch(() => undefined);
  for (const s of sessions) await s.close();
  await server?.stop();
}

// ---- report ----------------------------------------------------------------------

const med: Metrics = Object.fromEntries(
  Object.keys(perRun[0] ?? {}).map((k) => [k, median(perRun.map((m) => m[k] ?? Number.NaN))]),
);
// each run's ratio to today's figure of the same run, then their median: the machine's load moves
// from run to run far more than within the seconds between two rows of one run
const ratio = (key: string, ref: string) =>
  fmt(median(perRun.map((m) => (m[key] ?? Number.NaN) / (m[ref] ?? Number.NaN))), 2);
const claimRows = CLAIMS.map((c) => [
  c.label,
  fmt(med[`${c.key}.rounds`]),
  fmt(med[`${c.key}.jobs`]),
  fmt(med[`${c.key}.msPerRound`], 2),
  fmt(med[`${c.key}.claimOps`]),
  `${ratio(`${c.key}.jobs`, c.finish ? 'today.drain.jobs' : 'today.jobs')}×`,
  fmt(med[`${c.key}.serverUs`], 1),
  fmt(med[`${c.key}.clientUs`], 1),
]);
const addRows = ADDS.map((a) => [
  a.label,
  fmt(med[`${a.key}.jobs`]),
  `${ratio(`${a.key}.jobs`, `add.today.${a.inFlight}.jobs`)}×`,
  fmt(med[`${a.key}.serverUs`], 1),
  fmt(med[`${a.key}.clientUs`], 1),
]);
const rawRows = [
  ['pipelined single creates (1,000 in flight)', `${fmt(med['raw.creates'])} nodes/s`],
  ['multi of 100 creates, 1 in flight', `${fmt(med['raw.multiCreate1'])} nodes/s`],
  ['multi of 100 creates, 8 in flight', `${fmt(med['raw.multiCreate8'])} nodes/s`],
  ['multi of 100 deletes, 8 in flight', `${fmt(med['raw.multiDelete8'])} nodes/s`],
  ['one create at a time: p50 / p99', `${fmt(med['raw.latencyP50'], 2)} / ${fmt(med['raw.latencyP99'], 2)} ms`],
];
const sizes = `record ${todayRecord(0, started).length} B, layout 3 body ${bodyOf(0, started).length} B`;
const title = runs > 1 ? `median of ${runs} runs` : 'one run';
const text = [
  `Claim rounds: ${fmt(jobs)} jobs, ${batch} per round, one session unless said (${title}; ${sizes})`,
  table([
    ['', 'rounds/s', 'jobs/s', 'ms/round', 'claim ops', 'vs today', 'server µs/job', 'client µs/job'],
    ...claimRows,
  ]),
  "ms/round: the measure's time × rounds in flight ÷ rounds; claim ops: ops per claim multi; vs today: the median of each run's ratio to today's row",
  'of the same kind (the claim alone, or with finishes beside) in the same run',
  '',
  `Adds: ${fmt(jobs)} jobs in addBulk calls of ${fmt(bulk)}`,
  table([['', 'jobs/s', 'vs today', 'server µs/job', 'client µs/job'], ...addRows]),
  '',
  'Raw ZooKeeper, same run (bench/raw.ts)',
  table([['', ''], ...rawRows]),
  '',
  `cpus: ${availableParallelism()}; load per run: ${perRun.map((m) => m.load).join(', ')}; total ${((Date.now() - started) / 1000).toFixed(0)} s`,
].join('\n');
console.log(text);
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const outFile = flags.out ?? `${resultsDir}layout3-probe.json`;
writeFileSync(
  outFile,
  `${JSON.stringify({ at: new Date(started).toISOString(), jobs, batch, bulk, median: med, runs: perRun }, null, 2)}\n`,
);
log(`results written to ${outFile}`);
