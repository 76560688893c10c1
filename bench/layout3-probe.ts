/**
 * Probe: layout 3's claim round and add, measured on the raw session before
 * the layout is built, beside today's and the raw ZooKeeper limits of the
 * same run (bench/raw.ts). One ZooKeeper (fsync on), zkq's own Session,
 * N jobs of ~100 bytes of data, 50 per claim round. See docs/layout-3.md.
 *
 *   npm run bench:layout3                      one run (about 30 s on 2 cores)
 *   npm run bench:layout3 -- --runs 3          the median of three runs
 *   npm run bench:layout3 -- --zk 127.0.0.1:2181 [--zk-pid N]   an existing server
 *   npm run bench:layout3 -- --report a.json,b.json   the report of earlier runs, together
 *   options: --jobs 20000 --batch 50 --bulk 1000 --raw-nodes 20000
 *
 * A measure to read, not a test: nothing is asserted. Results also go to
 * bench/results/layout3-probe.json.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Session } from '@zkq/core';
import { startZooKeeper } from '@zkq/testing';
import { addBulk, type Layout, leavesOf, type ProbeJob, ProbeQueue } from './layout3-jobs.js';
import { ADDS, CLAIMS, type ClaimCase, type Metrics, render } from './layout3-report.js';
import { drain } from './layout3-rounds.js';
import { cpuMsOf, pipelined, rate, timed } from './lib.js';
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
    report: { type: 'string' },
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

/** What a run writes to its results file. */
interface Saved {
  jobs: number;
  batch: number;
  bulk: number;
  runs: Metrics[];
}

if (flags.report) {
  // the runs of earlier results, together (their options are the first file's)
  const saved = flags.report.split(',').map((f) => JSON.parse(readFileSync(f, 'utf8')) as Saved);
  const runsSaved = saved.flatMap((s) => s.runs);
  console.log(render(runsSaved, saved[0] as Saved));
  process.exit(0);
}

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

console.log(render(perRun, { jobs, batch, bulk }));
console.log(`cpus: ${availableParallelism()}; total ${((Date.now() - started) / 1000).toFixed(0)} s`);
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const outFile = flags.out ?? `${resultsDir}layout3-probe.json`;
writeFileSync(
  outFile,
  `${JSON.stringify({ at: new Date(started).toISOString(), jobs, batch, bulk, runs: perRun }, null, 2)}\n`,
);
log(`results written to ${outFile}`);
