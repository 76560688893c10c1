/**
 * zkq's benchmark, with BullMQ on Redis in the same run: starts its own
 * ZooKeeper (fsync on), a Redis without persistence and a Redis with every
 * write fsynced (`appendfsync always`, ZooKeeper's durability), measures the
 * raw limits of the ZooKeeper server, then runs the same workloads on zkq and
 * on BullMQ and prints every zkq figure beside BullMQ's and the raw limit,
 * then the targets. BullMQ on the fsynced Redis runs add, drain, e2e and
 * latency only (where durability matters); `ensemble` starts a 3-server
 * ensemble for zkq's inline drain.
 *
 *   npm run bench                                  everything but options and backlog (~3-4 minutes)
 *   npm run bench -- --help                        this text
 *   npm run bench -- --runs 3                      the median of three runs
 *   npm run bench -- --only add,drain              some sections: raw, add, drain, ensemble, threads,
 *                                                  e2e, retention, latency, procs, herd, options, backlog
 *   npm run bench -- --only drain,ensemble --jobs 5000   a short check of the drains
 *   npm run bench -- --systems zkq                 zkq only (zkq, bullmq, bullmq-fsync, bullmq-zk)
 *   npm run bench -- --backlog 1000000             also the 1,000,000-job backlog
 *   npm run bench -- --only drain --profile        V8 CPU profiles of the worker processes
 *   npm run bench -- --only drain --trace          count and time zkq's worker requests
 *   npm run bench -- --report bench/results/latest.json   print the report of an earlier run again
 *   npm run bench -- --zk 127.0.0.1:2181 [--zk-pid N] [--redis 127.0.0.1:6379 --redis-pid M]  existing servers
 *                    [--redis-fsync 127.0.0.1:6380 --redis-fsync-pid P]   (the ensemble is always the bench's own)
 *
 * zkq runs as users install it: `npm run bench` builds the packages first and
 * every process loads their JavaScript (dist), not the TypeScript sources.
 *
 * Results also go to bench/results/latest.json. See docs/benchmarks.md.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type RedisServer, startRedis, startZooKeeper, type ZooKeeperServer } from '@zkq/testing';
import { type BacklogServer, benchBacklog } from '../bench/backlog.js';
import { type BenchEnsemble, benchEnsembleDrain, startBenchEnsemble } from '../bench/ensemble.js';
import { benchHerd } from '../bench/herd.js';
import { cpuMsOf } from '../bench/lib.js';
import { measureRaw } from '../bench/raw.js';
import { type ReportOptions, render } from '../bench/report.js';
import {
  benchDrain,
  benchEndToEnd,
  benchEnqueue,
  benchLatency,
  type Metrics,
  type RunContext,
  warmUpDrain,
} from '../bench/scenarios.js';
import { bullmqSystem, bullmqZkSystem, type System, type SystemName, zkqSystem } from '../bench/systems.js';
import type { TraceEntry } from '../bench/worker-child.js';

const SECTIONS = [
  'raw',
  'add',
  'drain',
  'ensemble',
  'threads',
  'e2e',
  'retention',
  'latency',
  'procs',
  'herd',
  'options',
  'backlog',
] as const;
type Section = (typeof SECTIONS)[number];
/** Not in a default run: `options` (retries, priorities, events) and `backlog` (minutes). */
const OPT_IN: Section[] = ['options', 'backlog'];

const OPTIONS = {
  only: { type: 'string' },
  help: { type: 'boolean', default: false },
  systems: { type: 'string', default: 'zkq,bullmq,bullmq-fsync,bullmq-zk' },
  runs: { type: 'string', default: '1' },
  jobs: { type: 'string', default: '20000' },
  concurrency: { type: 'string', default: '50' },
  threads: { type: 'string' },
  'add-in-flight': { type: 'string', default: '1000' },
  'raw-nodes': { type: 'string', default: '20000' },
  samples: { type: 'string', default: '500' },
  spacing: { type: 'string', default: '5' },
  'herd-processes': { type: 'string', default: '4' },
  'herd-workers': { type: 'string', default: '25' },
  'herd-jobs': { type: 'string', default: '50' },
  'herd-idle': { type: 'string', default: '10' },
  'option-jobs': { type: 'string', default: '10000' },
  backlog: { type: 'string' },
  'backlog-heap-mb': { type: 'string', default: '4096' },
  profile: { type: 'boolean', default: false },
  trace: { type: 'boolean', default: false },
  zk: { type: 'string' },
  'zk-pid': { type: 'string' },
  redis: { type: 'string' },
  'redis-pid': { type: 'string' },
  'redis-fsync': { type: 'string' },
  'redis-fsync-pid': { type: 'string' },
  out: { type: 'string' },
  report: { type: 'string' },
} as const;
const { values: flags } = parseArgs({ options: OPTIONS });

if (flags.help) {
  // the usage is this file's header
  const source = readFileSync(fileURLToPath(import.meta.url), 'utf8');
  console.log(/\/\*\*\n([\s\S]*?)\n \*\//.exec(source)?.[1]?.replace(/^ \* ?/gm, '') ?? '');
  const defaults = Object.entries(OPTIONS).map(
    ([name, o]) => `--${name}${'default' in o && o.type === 'string' ? ` (${o.default})` : ''}`,
  );
  console.log(`\nOptions: ${defaults.join(', ')}.`);
  process.exit(0);
}

const num = (name: keyof typeof flags): number => {
  const n = Number(flags[name]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
};
const listOf = <T extends string>(flag: string, value: string, allowed: readonly T[]): T[] =>
  value.split(',').map((s) => {
    if (!(allowed as readonly string[]).includes(s))
      throw new Error(`--${flag}: unknown '${s}' (${allowed.join(', ')})`);
    return s as T;
  });
if (flags.report) {
  const saved = JSON.parse(readFileSync(flags.report, 'utf8')) as {
    runs: Metrics[];
    traces?: Record<string, Record<string, TraceEntry>>;
    options: Partial<ReportOptions>;
  };
  const o = saved.options;
  const { text } = render(saved.runs, saved.traces ?? {}, {
    jobs: o.jobs ?? 20_000,
    concurrency: o.concurrency ?? 50,
    addInFlight: o.addInFlight ?? 1000,
    herdWorkers: o.herdWorkers ?? 100,
  });
  console.log(text);
  process.exit(0);
}

const only = new Set<Section>(
  flags.only ? listOf('only', flags.only, SECTIONS) : SECTIONS.filter((s) => !OPT_IN.includes(s)),
);
if (flags.backlog) only.add('backlog');
const systems = listOf<SystemName>('systems', flags.systems as string, ['zkq', 'bullmq', 'bullmq-fsync', 'bullmq-zk']);
const runs = num('runs');
const jobs = num('jobs');
const concurrency = num('concurrency');
const backlogJobs = flags.backlog ? num('backlog') : 1_000_000;
const resultsDir = fileURLToPath(new URL('../bench/results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });

const started = Date.now();
const log = (msg: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);
const load0 = loadavg()[0] as number;

let zk: ZooKeeperServer | undefined;
let redis: RedisServer | undefined;
let redisFsync: RedisServer | undefined;
let ensemble: BenchEnsemble | undefined;
let backlogZk: { server: ZooKeeperServer; dataDir: string; dir: string } | undefined;
const perRun: Metrics[] = [];
const traces: Record<string, Record<string, TraceEntry>> = {};
try {
  let zkConnection = flags.zk;
  let zkPid = flags['zk-pid'] ? Number(flags['zk-pid']) : undefined;
  // The backlog runs on servers of its own; the other sections share these.
  const shared = [...only].some((s) => s !== 'backlog');
  if (!zkConnection && shared && (systems.includes('zkq') || systems.includes('bullmq-zk') || only.has('raw'))) {
    zk = await startZooKeeper({ fsync: true });
    zkConnection = zk.connectionString;
    zkPid = zk.process.pid;
    log(`zookeeper ${zkConnection} (fresh, fsync on)`);
  }
  let redisAddr = flags.redis;
  let redisPid = flags['redis-pid'] ? Number(flags['redis-pid']) : undefined;
  if (!redisAddr && systems.includes('bullmq')) {
    redis = await startRedis();
    redisAddr = `127.0.0.1:${redis.port}`;
    redisPid = redis.pid;
    log(`redis ${redisAddr} (fresh, no persistence)`);
  }
  const [redisHost = '127.0.0.1', redisPort = '6379'] = (redisAddr ?? '').split(':');
  // BullMQ on a Redis that fsyncs every write runs the sections where durability matters
  const durable = ['add', 'drain', 'threads', 'retention', 'procs', 'ensemble', 'e2e', 'latency'];
  let fsyncAddr = flags['redis-fsync'];
  let fsyncPid = flags['redis-fsync-pid'] ? Number(flags['redis-fsync-pid']) : undefined;
  if (!fsyncAddr && systems.includes('bullmq-fsync') && durable.some((s) => only.has(s as Section))) {
    redisFsync = await startRedis({ appendfsync: 'always' });
    fsyncAddr = `127.0.0.1:${redisFsync.port}`;
    fsyncPid = redisFsync.pid;
    log(`redis ${fsyncAddr} (fresh, appendfsync always)`);
  }
  const [fsyncHost = '127.0.0.1', fsyncPort = '6379'] = (fsyncAddr ?? '').split(':');
  if (only.has('ensemble') && systems.includes('zkq')) {
    ensemble = await startBenchEnsemble();
    log(`zookeeper ensemble ${ensemble.connectionString} (fresh, 3 servers, fsync on)`);
  }

  for (let run = 1; run <= runs; run++) {
    if (runs > 1) log(`run ${run} of ${runs}`);
    // The machine's load when the run starts: figures of a loaded run are not those of the hardware.
    const metrics: Metrics = { load: Math.round((loadavg()[0] as number) * 10) / 10 };
    const prefix = `bench-${started.toString(36)}-${run}`;
    const contexts: RunContext[] = systems.map((name) => {
      const sys: System =
        name === 'zkq'
          ? zkqSystem(zkConnection as string, zkPid, prefix)
          : name === 'bullmq-zk'
            ? bullmqZkSystem(zkConnection as string, zkPid, prefix)
            : name === 'bullmq-fsync'
              ? bullmqSystem(fsyncHost, Number(fsyncPort), fsyncPid, prefix, 'fsync-always')
              : bullmqSystem(redisHost, Number(redisPort), redisPid, prefix);
      return {
        sys,
        jobs,
        concurrency,
        ...(flags.threads ? { threads: num('threads') } : {}),
        ...(flags.trace ? { trace: true } : {}),
        ...(flags.profile ? { profileDir: `${resultsDir}profiles` } : {}),
        metrics,
        prepared: [],
        traces,
        log,
      };
    });
    const each = async (fn: (ctx: RunContext) => Promise<void>, which: SystemName[] = ['zkq', 'bullmq']) => {
      for (const ctx of contexts) if (which.includes(ctx.sys.name)) await fn(ctx);
    };
    const trace = flags.trace ? { trace: true } : {};
    const threads = flags.threads ? { threads: num('threads') } : {};
    const withFsync: SystemName[] = ['zkq', 'bullmq', 'bullmq-fsync'];

    if (only.has('raw') && zkConnection) {
      log('raw ZooKeeper limits (one session, pipelined)');
      const r = await measureRaw(zkConnection, {
        nodes: num('raw-nodes'),
        inFlight: 1000,
        multiSize: 100,
        serverCpuMs: () => cpuMsOf(zkPid),
      });
      Object.assign(metrics, {
        'raw.creates': r.createsPerSec,
        'raw.deletes': r.deletesPerSec,
        'raw.multiCreate1': r.multiCreateNodesPerSec1,
        'raw.multiCreate8': r.multiCreateNodesPerSec8,
        'raw.multiDelete1': r.multiDeleteNodesPerSec1,
        'raw.multiDelete8': r.multiDeleteNodesPerSec8,
        'raw.latencyP50': r.createLatencyP50,
        'raw.latencyP99': r.createLatencyP99,
        'raw.cpuUsPerCreate': r.serverCpuUsPerCreate,
        'raw.cpuUsPerMultiNode': r.serverCpuUsPerMultiCreate,
      });
    }
    const timedSections = [...only].filter((s) => s !== 'raw' && s !== 'backlog');
    if (run === 1 && timedSections.length > 0) await each((ctx) => warmUpDrain(ctx), withFsync);
    if (only.has('add')) {
      await each(async (ctx) => {
        log(`${ctx.sys.label} enqueue: addBulk and pipelined add, ${jobs} jobs each`);
        await benchEnqueue(ctx, num('add-in-flight'));
      }, withFsync);
    }
    // The drain is the reference of threads, retention, processes and the ensemble: they need it in the same run.
    const needInline = ['drain', 'threads', 'retention', 'procs', 'ensemble'].some((s) => only.has(s as Section));
    // BullMQ's Worker on the ZooKeeper backend runs the inline drain only, beside the others
    if (needInline) {
      await each(
        (ctx) => benchDrain(ctx, { key: 'drain', processes: 1, ...trace, ...threads }),
        [...withFsync, 'bullmq-zk'],
      );
    }
    if (ensemble) {
      const ctx = contexts.find((c) => c.sys.name === 'zkq') as RunContext;
      await benchEnsembleDrain({ ...ctx, sys: ensemble.system(prefix), prepared: [] }, run === 1, trace);
    }
    if (only.has('threads')) {
      await each(
        (ctx) => benchDrain(ctx, { key: 'threads', processes: 1, processor: 'threaded', ...trace, ...threads }),
        ['zkq'],
      );
    }
    if (only.has('e2e')) await each((ctx) => benchEndToEnd(ctx), withFsync);
    if (only.has('retention'))
      await each((ctx) => benchDrain(ctx, { key: 'retention', processes: 1, retention: 'keep-1000', ...trace }));
    if (only.has('procs')) {
      await each((ctx) => benchDrain(ctx, { key: 'procs2', processes: 2, ...trace }));
      await each((ctx) => benchDrain(ctx, { key: 'procs4', processes: 4, ...trace }));
    }
    if (only.has('latency')) await each((ctx) => benchLatency(ctx, num('samples'), num('spacing')), withFsync);
    if (only.has('herd')) {
      await each((ctx) =>
        benchHerd(ctx, {
          processes: num('herd-processes'),
          workersPerProcess: num('herd-workers'),
          jobs: num('herd-jobs'),
          idleMs: num('herd-idle') * 1000,
        }),
      );
    }
    if (only.has('options')) {
      const optionJobs = num('option-jobs');
      await each(async (ctx) => {
        const c = { ...ctx, jobs: optionJobs };
        const remove = ctx.sys.retention('remove');
        await benchDrain(c, {
          key: 'retry',
          processes: 1,
          behaviour: 'fail-first',
          jobOpts: () => ({ ...remove, attempts: 3, backoff: { type: 'fixed', delay: 0 } }),
        });
        await benchDrain(c, {
          key: 'priority',
          processes: 1,
          jobOpts: (i) => (i % 2 === 0 ? { ...remove, priority: 1 + (i % 10) } : remove),
        });
        await benchDrain(c, { key: 'events', processes: 1, jobOpts: () => remove, listen: true });
      });
    }
    perRun.push(metrics);
  }

  // Once, after the runs: minutes long, and on a ZooKeeper of its own (large heap, restartable).
  if (only.has('backlog')) {
    const m = perRun[perRun.length - 1] as Metrics;
    const server: BacklogServer = systems.includes('bullmq') ? { redisPort: Number(redisPort) } : {};
    let connection = zkConnection;
    let pid = zkPid;
    if (!flags.zk && systems.includes('zkq')) {
      const dir = mkdtempSync(join(tmpdir(), 'zkq-bench-backlog-'));
      const bz = await startZooKeeper({ fsync: true, heapMb: num('backlog-heap-mb'), dataDir: dir });
      backlogZk = { server: bz, dataDir: join(dir, 'data'), dir };
      server.zk = backlogZk;
      connection = bz.connectionString;
      pid = bz.process.pid;
      log(`zookeeper for the backlog ${connection} (heap ${num('backlog-heap-mb')} MiB)`);
    }
    const prefix = `bench-${started.toString(36)}-backlog`;
    // zkq and BullMQ on Redis without persistence: neither BullMQ on the ZooKeeper backend nor on
    // the fsynced Redis is part of this scenario (minutes more, and no target compares with them)
    for (const name of systems.filter((s) => s === 'zkq' || s === 'bullmq')) {
      const sys =
        name === 'zkq'
          ? zkqSystem(connection as string, pid, prefix)
          : bullmqSystem(redisHost, Number(redisPort), redisPid, prefix);
      await benchBacklog(
        { sys, jobs: backlogJobs, concurrency, metrics: m, prepared: [], traces, log },
        backlogJobs,
        server,
      );
    }
  }
} finally {
  await backlogZk?.server.stop();
  if (backlogZk) rmSync(backlogZk.dir, { recursive: true, force: true });
  await ensemble?.stop();
  await redisFsync?.stop();
  await redis?.stop();
  await zk?.stop();
}

// ---- report ----------------------------------------------------------------------

const reportOptions: ReportOptions = {
  jobs,
  concurrency,
  addInFlight: num('add-in-flight'),
  herdWorkers: num('herd-processes') * num('herd-workers'),
};
const { text, median: result } = render(perRun, traces, reportOptions);
const load1 = loadavg()[0] as number;
const machine =
  `cpus: ${availableParallelism()} × ${cpus()[0]?.model ?? '?'}; node ${process.version}; ` +
  `load average ${load0.toFixed(1)} at start, ${load1.toFixed(1)} at end; total ${((Date.now() - started) / 1000).toFixed(0)} s`;
console.log(`${text}\n\n${machine}`);

const outFile = flags.out ?? `${resultsDir}latest.json`;
writeFileSync(
  outFile,
  `${JSON.stringify(
    {
      at: new Date(started).toISOString(),
      durationS: Math.round((Date.now() - started) / 1000),
      machine: { cpus: availableParallelism(), model: cpus()[0]?.model, node: process.version, load: [load0, load1] },
      options: { ...reportOptions, runs, systems, sections: [...only] },
      median: result,
      runs: perRun,
      traces,
    },
    null,
    2,
  )}\n`,
);
log(`results written to ${outFile}`);
