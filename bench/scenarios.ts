/**
 * zkq's benchmark scenarios: producing (add, addBulk), draining a backlog
 * with one worker process, idle latency, and the cost of options.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { JobsOptions } from '@zkq/core';
import { Queue, QueueEvents } from '@zkq/producer';
import { clock, counterDelta, percentile, pipelined, rate, type ServerCounters, serverCounters, timed } from './lib.js';
import type { ChildConfig, ChildReport, TraceEntry } from './worker-child.js';

export interface BenchEnv {
  connectionString: string;
  port: number;
  /** Pid of the ZooKeeper JVM (for its CPU time), if known. */
  zkPid: number | undefined;
  prefix: string;
  /** Write V8 CPU profiles of worker children into this directory. */
  profileDir?: string;
  /** Count and time every request of the worker children. */
  trace?: boolean;
}

/** Cost of a scenario on the server: write transactions and requests per job, ZooKeeper CPU. */
export interface ServerCost {
  txPerJob: number;
  requestsPerJob: number;
  /** ZooKeeper JVM CPU time over the scenario, ms (user + system). */
  zkCpuMs: number;
}

/** Longest a worker child may take to see all its jobs finish. */
const CHILD_TIMEOUT_MS = 180_000;
const root = fileURLToPath(new URL('..', import.meta.url));
const childEntry = fileURLToPath(new URL('./worker-child.ts', import.meta.url));

/** CPU time (user + system, ms) of a process, from /proc; NaN where unavailable. */
export function cpuMsOf(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (100 Hz)
  } catch {
    return Number.NaN;
  }
}

/** Measures the server-side cost of `fn` over `jobs` jobs. */
async function withCost<T>(env: BenchEnv, jobs: number, fn: () => Promise<T>): Promise<{ value: T; cost: ServerCost }> {
  const c0: ServerCounters = await serverCounters(env.port);
  const cpu0 = cpuMsOf(env.zkPid);
  const value = await fn();
  const cpu1 = cpuMsOf(env.zkPid);
  const d = counterDelta(c0, await serverCounters(env.port));
  return {
    value,
    cost: {
      txPerJob: round2(d.zxid / jobs),
      // The two four-letter words of the first sample are counted; leave them out.
      requestsPerJob: round2((d.packetsReceived - 2) / jobs),
      zkCpuMs: Math.round(cpu1 - cpu0),
    },
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

function queueFor(env: BenchEnv, name: string): Queue {
  return new Queue(name, {
    connection: { connectionString: env.connectionString, requestTimeout: 60_000 },
    prefix: env.prefix,
  });
}

// ---- producing ---------------------------------------------------------------

export interface ProduceResult {
  jobs: number;
  jobsPerSec: number;
  ms: number;
  cost: ServerCost;
}

/** `add` one job per call, `inFlight` calls pending at once. */
export async function benchAdd(env: BenchEnv, jobs: number, inFlight: number): Promise<ProduceResult> {
  const queue = queueFor(env, 'add');
  try {
    await queue.waitUntilReady();
    await pipelined(200, 50, (i) => queue.add('warm', { i })); // ids, tail bucket, JIT
    const { value: ms, cost } = await withCost(env, jobs, () =>
      timed(() => pipelined(jobs, inFlight, (i) => queue.add('job', { i }))),
    );
    return { jobs, jobsPerSec: rate(jobs, ms), ms: Math.round(ms), cost };
  } finally {
    await queue.close();
  }
}

/** One `addBulk` call of `jobs` jobs. */
export async function benchAddBulk(env: BenchEnv, jobs: number): Promise<ProduceResult> {
  const queue = queueFor(env, 'add-bulk');
  try {
    await queue.waitUntilReady();
    await queue.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'warm', data: { i } })));
    const batch = Array.from({ length: jobs }, (_, i) => ({ name: 'job', data: { i } }));
    const { value: ms, cost } = await withCost(env, jobs, () => timed(() => queue.addBulk(batch)));
    return { jobs, jobsPerSec: rate(jobs, ms), ms: Math.round(ms), cost };
  } finally {
    await queue.close();
  }
}

// ---- one worker process ---------------------------------------------------------

/** Starts a worker child; resolves with its report once it has seen `expect` completions. */
async function runChild(
  env: BenchEnv,
  cfg: Omit<ChildConfig, 'connectionString' | 'prefix'>,
  onReady?: () => Promise<void>,
): Promise<ChildReport> {
  const full: ChildConfig = {
    ...cfg,
    connectionString: env.connectionString,
    prefix: env.prefix,
    ...(env.trace ? { trace: true } : {}),
  };
  const execArgv = ['--import', 'tsx', '--conditions=zkq-source'];
  if (env.profileDir)
    execArgv.push('--cpu-prof', `--cpu-prof-dir=${env.profileDir}`, `--cpu-prof-name=${cfg.queue}.cpuprofile`);
  const child = fork(childEntry, [JSON.stringify(full)], {
    cwd: root,
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    return await new Promise<ChildReport>((resolve, reject) => {
      const limit = setTimeout(() => reject(new Error(`worker child for '${cfg.queue}' timed out`)), CHILD_TIMEOUT_MS);
      child.once('exit', () => clearTimeout(limit));
      child.once('exit', (code) => reject(new Error(`worker child for '${cfg.queue}' exited with ${code}`)));
      child.on('message', (m: { kind: string }) => {
        if (m.kind === 'ready' && onReady) onReady().catch(reject);
        if (m.kind === 'done') {
          clearTimeout(limit);
          resolve(m as ChildReport);
        }
      });
    });
  } finally {
    // Let it close cleanly (a CPU profile is written at exit), but not forever.
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

export interface DrainOptions {
  name: string;
  jobs: number;
  processor: 'inline' | 'threaded';
  behaviour?: 'noop' | 'fail-first';
  concurrency: number;
  threads?: number;
  /** Options of every job, or of job i. */
  jobOpts?: (i: number) => JobsOptions | undefined;
  /** Keep a QueueEvents listening during the drain (writers then log events). */
  listen?: boolean;
}

export interface DrainResult {
  name: string;
  jobs: number;
  /** Jobs per second from worker construction to the last completion. */
  jobsPerSec: number;
  /** Jobs per second from the first to the last completion (start-up left out). */
  steadyJobsPerSec: number;
  readyMs: number;
  firstMs: number;
  lastMs: number;
  failedEvents: number;
  /** Jobs that failed for good (should be 0). */
  finalFailures: number;
  /** Worker process CPU per job, µs. */
  workerCpuUsPerJob: number;
  /** Worker process CPU over the drain as a share of one core. */
  workerCpuShare: number;
  cost: ServerCost;
  /** Jobs left waiting/active after the drain (should be 0). */
  leftOver: number;
  /** Requests of the worker session by kind (with --trace). */
  trace?: Record<string, TraceEntry>;
  /** `completed` events a listening QueueEvents received (with `listen`). */
  completedEvents?: number;
}

/** Enqueues `jobs` jobs (not timed), then times one worker process draining them. */
export async function benchDrain(env: BenchEnv, o: DrainOptions): Promise<DrainResult> {
  const queue = queueFor(env, o.name);
  let events: QueueEvents | undefined;
  let completedEvents = 0;
  try {
    await queue.waitUntilReady();
    if (o.listen) {
      events = new QueueEvents(o.name, { connection: { connectionString: env.connectionString }, prefix: env.prefix });
      events.on('completed', () => completedEvents++);
      await events.waitUntilReady();
    }
    for (let i = 0; i < o.jobs; i += 5000) {
      const n = Math.min(5000, o.jobs - i);
      await queue.addBulk(
        Array.from({ length: n }, (_, k) => {
          const opts = o.jobOpts?.(i + k);
          return { name: 'job', data: { i: i + k }, ...(opts ? { opts } : {}) };
        }),
      );
    }
    const { value: r, cost } = await withCost(env, o.jobs, () =>
      runChild(env, {
        queue: o.name,
        processor: o.processor,
        behaviour: o.behaviour ?? 'noop',
        concurrency: o.concurrency,
        expect: o.jobs,
        ...(o.threads ? { threads: o.threads } : {}),
      }),
    );
    const counts = await queue.getJobCounts('waiting', 'active', 'prioritized', 'delayed');
    const cpuMs = r.cpuUserMs + r.cpuSystemMs;
    return {
      name: o.name,
      jobs: o.jobs,
      jobsPerSec: rate(r.completed, r.lastMs),
      steadyJobsPerSec: rate(r.completed - 1, r.lastMs - r.firstMs),
      readyMs: Math.round(r.readyMs),
      firstMs: Math.round(r.firstMs),
      lastMs: Math.round(r.lastMs),
      failedEvents: r.failedEvents,
      finalFailures: r.finalFailures,
      workerCpuUsPerJob: Math.round((cpuMs * 1000) / o.jobs),
      workerCpuShare: round2(cpuMs / r.lastMs),
      cost,
      leftOver: Object.values(counts).reduce((a, b) => a + b, 0),
      ...(r.trace ? { trace: r.trace } : {}),
      ...(o.listen ? { completedEvents } : {}),
    };
  } finally {
    await events?.close();
    await queue.close();
  }
}

// ---- idle latency ------------------------------------------------------------------

export interface LatencyResult {
  samples: number;
  spacingMs: number;
  concurrency: number;
  /** add-call start → processor start, ms. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** add-call start → add resolved, ms. */
  addP50: number;
  addP99: number;
  /** Requests of the worker session by kind (with --trace). */
  trace?: Record<string, TraceEntry>;
}

/** With an idle worker, adds jobs one at a time `spacingMs` apart; times add-call start → processor start. */
export async function benchLatency(
  env: BenchEnv,
  samples: number,
  spacingMs: number,
  concurrency: number,
): Promise<LatencyResult> {
  const queue = queueFor(env, 'latency');
  const addTimes: number[] = [];
  try {
    await queue.waitUntilReady();
    await queue.add('warm', { t: clock() }); // ids, tail bucket
    const report = await runChild(
      env,
      { queue: 'latency', processor: 'inline', behaviour: 'latency', concurrency, expect: samples + 1 },
      async () => {
        await sleep(500); // let the worker go idle on its watches
        for (let i = 0; i < samples; i++) {
          const t = clock();
          await queue.add('job', { t });
          addTimes.push(clock() - t);
          await sleep(spacingMs);
        }
      },
    );
    const lat = (report.latencies ?? []).slice(1); // the warm-up job waited for the worker to start
    return {
      samples: lat.length,
      spacingMs,
      concurrency,
      p50: round2(percentile(lat, 50)),
      p90: round2(percentile(lat, 90)),
      p99: round2(percentile(lat, 99)),
      max: round2(Math.max(...lat)),
      addP50: round2(percentile(addTimes, 50)),
      addP99: round2(percentile(addTimes, 99)),
      ...(report.trace ? { trace: report.trace } : {}),
    };
  } finally {
    await queue.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
