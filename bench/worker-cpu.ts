/**
 * The worker's CPU per job: the bench's zkq inline drain (20,000 no-op jobs,
 * 100-byte data, `removeOnComplete`, concurrency 50, one worker process),
 * run again and again on one ZooKeeper, optionally alternating between
 * checkouts (A B A B ...) so that a change is measured against what it
 * changes under the same load. Prints, per drain, the worker's CPU per job
 * (`process.cpuUsage` from go to the last finish, over the jobs), jobs/s,
 * the server's CPU per job and transactions and requests per job (the same
 * on both sides when no op sent to ZooKeeper changed). With `--profile`, the
 * worker writes a V8 CPU profile and the top self-time functions are printed.
 *
 *   npx tsx bench/worker-cpu.ts                                  three drains of this checkout
 *   npx tsx bench/worker-cpu.ts --roots /other/checkout,. --pairs 3   A B A B A B
 *   npx tsx bench/worker-cpu.ts --profile --drains 1             one drain and its profile's top entries
 *   npx tsx bench/worker-cpu.ts --summarize <file.cpuprofile>    a saved profile's top entries
 *   npx tsx bench/worker-cpu.ts --roots /other/checkout,. --pairs 6 --together
 *       each pair's two drains at the same time, on queues of their own: both
 *       meet the same load (on a shared machine, load that drifts between two
 *       drains run one after the other moves the CPU per job more than most cuts)
 *
 * Every checkout runs its own built packages (`npx tsc -b` in it first).
 * Run one at a time, as the bench: two measurements at once measure each other.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startZooKeeper } from '@zkq/testing';
import { clock, fmt, median, rate, table } from './lib.js';
import { benchDrain, fill, type Metrics, type RunContext } from './scenarios.js';
import { WorkerGroup, zkqSystem } from './systems.js';

const { values: flags } = parseArgs({
  options: {
    roots: { type: 'string', default: '.' },
    pairs: { type: 'string', default: '3' },
    drains: { type: 'string' },
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    profile: { type: 'boolean', default: false },
    together: { type: 'boolean', default: false },
    top: { type: 'string', default: '15' },
    zk: { type: 'string' },
    'zk-pid': { type: 'string' },
    summarize: { type: 'string' },
  },
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The `top` functions by self time in a V8 CPU profile, with their share of the busy (non-idle) time. */
export function topSelfTime(file: string, top: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const frame = byId.get(profile.samples[i] as number)?.callFrame;
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (!frame || frame.functionName === '(idle)') continue;
    const where = frame.url
      ? ` ${frame.url.replace(/^.*\/(node_modules|packages)\//, '')}:${frame.lineNumber + 1}`
      : '';
    const key = `${frame.functionName || '(anonymous)'}${where}`;
    self.set(key, (self.get(key) ?? 0) + us);
    busy += us;
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
  return table([
    ['function', 'self ms', '% of busy'],
    ...rows.map(([key, us]) => [key, fmt(us / 1000), fmt((100 * us) / busy, 1)]),
    ['busy (not idle)', fmt(busy / 1000), '100.0'],
  ]);
}

if (flags.summarize) {
  console.log(topSelfTime(flags.summarize, Number(flags.top)));
  process.exit(0);
}

const roots = (flags.roots ?? '.').split(',').map((r) => resolve(r));
const drains = flags.drains ? Number(flags.drains) : Number(flags.pairs) * roots.length;
const jobs = Number(flags.jobs);
const log = (msg: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

const server = flags.zk ? undefined : await startZooKeeper();
const connection = flags.zk ?? (server?.connectionString as string);
const pid = flags['zk-pid'] ? Number(flags['zk-pid']) : server?.process.pid;
const started = Date.now().toString(36);
const context = (prefix: string, n: number, metrics: Metrics): RunContext => ({
  sys: zkqSystem(connection, pid, prefix),
  jobs: n,
  concurrency: Number(flags.concurrency),
  metrics,
  prepared: [],
  traces: {},
  log,
});

type Row = { root: string; cpuUs: number; rate: number; serverUs: number; tx: number; req: number };

/** One drain per checkout, all at once, each on a queue of its own: their figures, in the order of `roots`. */
async function drainTogether(d: number): Promise<Row[]> {
  const contexts = roots.map((_, i) => context(`cpu-${started}-${d}-${i}`, jobs, {}));
  for (const ctx of contexts) await fill(ctx, 'drain', jobs, { removeOnComplete: true });
  const queues = contexts.map((ctx) => ctx.sys.queue('drain'));
  await Promise.all(queues.map((q) => q.waitUntilReady().then(() => q.pause())));
  const profileDirs = roots.map(() => (flags.profile ? mkdtempSync(join(tmpdir(), 'zkq-worker-cpu-')) : undefined));
  const groups = await Promise.all(
    roots.map((root, i) => {
      const profileDir = profileDirs[i];
      return WorkerGroup.start(
        (contexts[i] as RunContext).sys,
        {
          queue: 'drain',
          processes: 1,
          concurrency: Number(flags.concurrency),
          root,
          ...(profileDir ? { profileDir } : {}),
        },
        jobs * 10 + 60_000,
      );
    }),
  );
  try {
    const t0 = clock();
    for (const g of groups) g.go();
    await Promise.all(queues.map((q) => q.resume()));
    await Promise.all(groups.map((g) => g.waitFinished(jobs)));
    const reports = await Promise.all(groups.map((g) => g.stop()));
    return roots.map((root, i) => {
      const [r] = reports[i] ?? [];
      const row = {
        root,
        cpuUs: Math.round(((r?.cpuMs ?? Number.NaN) * 1000) / jobs),
        rate: rate(jobs, (r?.lastAt ?? Number.NaN) - t0),
        serverUs: Number.NaN,
        tx: Number.NaN,
        req: Number.NaN,
      };
      log(`${root}: ${row.cpuUs} µs/job, ${fmt(row.rate)} jobs/s (together)`);
      return row;
    });
  } finally {
    await Promise.all(groups.map((g) => g.kill()));
    await Promise.all(queues.map((q) => q.close()));
    for (const [i, dir] of profileDirs.entries()) if (dir) printProfile(dir, roots[i] as string);
  }
}

/** The top self-time functions of the main thread's profile a worker process wrote into `dir`. */
function printProfile(dir: string, root: string): void {
  const where = join(dir, 'zkq-drain-0');
  const main = readdirSync(where).find((f) => /\.0\.\d+\.cpuprofile$/.test(f));
  if (!main) return;
  log(`${root}: profile ${join(where, main)}`);
  console.log(topSelfTime(join(where, main), Number(flags.top)));
}
const rows: Row[] = [];
try {
  // a fresh JVM runs its first thousands of requests at a fraction of its speed
  for (const root of roots)
    await benchDrain(context(`cpu-${started}-warm`, 2000, {}), { key: 'warm', processes: 1, root });
  for (let d = 0; flags.together && d < drains / roots.length; d++) rows.push(...(await drainTogether(d)));
  for (let d = 0; !flags.together && d < drains; d++) {
    const root = roots[d % roots.length] as string;
    const metrics: Metrics = {};
    const profileDir = flags.profile ? mkdtempSync(join(tmpdir(), 'zkq-worker-cpu-')) : undefined;
    await benchDrain(
      { ...context(`cpu-${started}-${d}`, jobs, metrics), ...(profileDir ? { profileDir } : {}) },
      { key: 'drain', processes: 1, root },
    );
    const row: Row = {
      root,
      cpuUs: metrics['zkq.drain.workerCpuUs'] ?? Number.NaN,
      rate: metrics['zkq.drain.rate'] ?? Number.NaN,
      serverUs: metrics['zkq.drain.serverCpuUs'] ?? Number.NaN,
      tx: metrics['zkq.drain.txPerJob'] ?? Number.NaN,
      req: metrics['zkq.drain.reqPerJob'] ?? Number.NaN,
    };
    rows.push(row);
    log(`${root}: ${row.cpuUs} µs/job, ${fmt(row.rate)} jobs/s, tx/job ${row.tx}, req/job ${row.req}`);
    if (profileDir) printProfile(profileDir, root);
  }
} finally {
  await server?.stop();
}

console.log(
  table([
    ['drain', 'checkout', 'worker µs/job', 'jobs/s', 'server µs/job', 'tx/job', 'req/job'],
    ...rows.map((r, i) => [
      String(i + 1),
      r.root,
      fmt(r.cpuUs),
      fmt(r.rate),
      fmt(r.serverUs),
      fmt(r.tx, 2),
      fmt(r.req, 2),
    ]),
  ]),
);
if (roots.length > 1) {
  // each drain against the one before it of the first checkout: the load of the machine drifts less within a pair
  const firstRoot = roots[0] as string;
  for (const root of roots.slice(1)) {
    const diffs: number[] = [];
    rows.forEach((r, i) => {
      const before = rows[i - roots.indexOf(root)];
      if (r.root === root && before?.root === firstRoot) diffs.push(r.cpuUs - before.cpuUs);
    });
    console.log(`${root} - ${firstRoot}, pair by pair: ${diffs.join(', ')} µs/job (median ${fmt(median(diffs), 1)})`);
  }
  for (const root of roots) {
    const mine = rows.filter((r) => r.root === root);
    console.log(
      `${root}: median ${fmt(median(mine.map((r) => r.cpuUs)))} µs/job (${mine.map((r) => r.cpuUs).join(', ')}), ` +
        `${fmt(median(mine.map((r) => r.rate)))} jobs/s`,
    );
  }
}
