/**
 * The benchmark's workloads, the same for zkq and BullMQ: no-op jobs with
 * 100-byte data, drained by worker processes at one concurrency. Every
 * figure goes into a flat `Metrics` map under `<system>.<scenario>.<figure>`,
 * so that several runs can be reduced to their medians.
 */
import type { JobsOptions } from '@zkq/core';
import { clock, counterDelta, payload, percentile, pipelined, rate, round2, sleep } from './lib.js';
import {
  type BenchQueue,
  type GroupOptions,
  type Retention,
  type System,
  serverCpuMs,
  WorkerGroup,
} from './systems.js';
import type { ChildReport, TraceEntry } from './worker-child.js';

export type Metrics = Record<string, number>;

export interface RunContext {
  sys: System;
  /** Jobs per scenario. */
  jobs: number;
  concurrency: number;
  threads?: number;
  trace?: boolean;
  profileDir?: string;
  metrics: Metrics;
  /** Queues already holding `jobs` waiting jobs with removeOnComplete (left by the add scenarios). */
  prepared: string[];
  /** Traces of worker requests by scenario (zkq, with --trace). */
  traces: Record<string, Record<string, TraceEntry>>;
  log: (msg: string) => void;
}

/** Jobs per addBulk call. */
export const BULK_CHUNK = 1000;
/** Longest a worker group may take per job before the run fails, ms. */
const LIMIT_MS_PER_JOB = 10;

const put = (ctx: RunContext, key: string, value: number) => {
  ctx.metrics[`${ctx.sys.name}.${key}`] = value;
};

function chunks(n: number, opts: JobsOptions, start = 0, size = BULK_CHUNK) {
  const out: { name: string; data: unknown; opts: JobsOptions }[][] = [];
  for (let i = 0; i < n; i += size) {
    out.push(
      Array.from({ length: Math.min(size, n - i) }, (_, k) => ({
        name: 'job',
        data: payload({ i: start + i + k }),
        opts,
      })),
    );
  }
  return out;
}

async function withQueue<T>(ctx: RunContext, name: string, fn: (q: BenchQueue) => Promise<T>): Promise<T> {
  const q = ctx.sys.queue(name);
  try {
    await q.waitUntilReady();
    return await fn(q);
  } finally {
    await q.close();
  }
}

/** Enqueues `n` jobs with addBulk, not timed. */
export async function fill(ctx: RunContext, name: string, n: number, opts: JobsOptions): Promise<void> {
  await withQueue(ctx, name, async (q) => {
    for (const chunk of chunks(n, opts)) await q.addBulk(chunk);
  });
}

/** A queue holding `jobs` waiting jobs with removeOnComplete: one the add scenarios left, or a new one. */
async function backlog(ctx: RunContext, name: string): Promise<string> {
  const ready = ctx.prepared.shift();
  if (ready) return ready;
  await fill(ctx, name, ctx.jobs, ctx.sys.retention('remove'));
  return name;
}

/** A little traffic on a queue of its own, so that timed sections do not pay for the first JIT. */
async function warmUp(ctx: RunContext): Promise<void> {
  await withQueue(ctx, 'warm', async (q) => {
    await q.addBulk(chunks(BULK_CHUNK, ctx.sys.retention('remove'))[0] ?? []);
    await pipelined(200, 50, (i) => q.add('warm', payload({ i }), ctx.sys.retention('remove')));
  });
}

/** Jobs of the untimed drain that warms a fresh server (and the bench's own paths) before anything is timed. */
const WARM_DRAIN_JOBS = 2000;

/** An untimed small drain: a fresh ZooKeeper JVM runs its first thousands of requests at a fraction of its speed. */
export async function warmUpDrain(ctx: RunContext): Promise<void> {
  await benchDrain(
    { ...ctx, jobs: WARM_DRAIN_JOBS, metrics: {}, prepared: [], traces: {} },
    { key: 'warm-drain', processes: 1 },
  );
}

// ---- enqueue -----------------------------------------------------------------------

/** addBulk × BULK_CHUNK jobs, one call after the other; pipelined single adds. */
export async function benchEnqueue(ctx: RunContext, inFlight: number): Promise<void> {
  const { sys, jobs } = ctx;
  const opts = sys.retention('remove');
  await warmUp(ctx);
  await withQueue(ctx, 'bulk', async (q) => {
    const batches = chunks(jobs, opts);
    const c0 = await sys.counters();
    const t0 = clock();
    for (const b of batches) await q.addBulk(b);
    const ms = clock() - t0;
    const d = counterDelta(c0, await sys.counters());
    put(ctx, 'addBulk.rate', rate(jobs, ms));
    if (d.zxid !== undefined) put(ctx, 'addBulk.txPerJob', round2(d.zxid / jobs));
  });
  ctx.prepared.push('bulk');
  await withQueue(ctx, 'single', async (q) => {
    const c0 = await sys.counters();
    const t0 = clock();
    await pipelined(jobs, inFlight, (i) => q.add('job', payload({ i }), opts));
    const ms = clock() - t0;
    const d = counterDelta(c0, await sys.counters());
    put(ctx, 'add.rate', rate(jobs, ms));
    if (d.zxid !== undefined) put(ctx, 'add.txPerJob', round2(d.zxid / jobs));
  });
  ctx.prepared.push('single');
}

// ---- draining a backlog --------------------------------------------------------------

export interface DrainSpec extends Omit<GroupOptions, 'queue' | 'concurrency'> {
  /** Metrics key of the scenario. */
  key: string;
  retention?: Retention;
  /** Options of job i (instead of the retention's). */
  jobOpts?: (i: number) => JobsOptions;
  /** Keep a QueueEvents listening during the drain. */
  listen?: boolean;
}

/** Times worker processes draining a backlog: queue paused while they start, then resumed. */
export async function benchDrain(ctx: RunContext, spec: DrainSpec): Promise<void> {
  const { sys, jobs } = ctx;
  ctx.log(`${sys.label} ${spec.key}: ${jobs} jobs, ${spec.processes} process(es), concurrency ${ctx.concurrency}`);
  let name = spec.key;
  if (spec.jobOpts) {
    const jobOpts = spec.jobOpts;
    await withQueue(ctx, name, async (q) => {
      for (let i = 0; i < jobs; i += BULK_CHUNK) {
        const n = Math.min(BULK_CHUNK, jobs - i);
        await q.addBulk(
          Array.from({ length: n }, (_, k) => ({ name: 'job', data: payload({ i: i + k }), opts: jobOpts(i + k) })),
        );
      }
    });
  } else if ((spec.retention ?? 'remove') === 'remove') name = await backlog(ctx, name);
  else await fill(ctx, name, jobs, sys.retention(spec.retention ?? 'remove'));

  const events = spec.listen ? sys.events(name) : undefined;
  let eventsSeen = 0;
  events?.on('completed', () => eventsSeen++);
  await events?.waitUntilReady();
  try {
    await withQueue(ctx, name, async (q) => {
      await q.pause();
      const group = await WorkerGroup.start(
        sys,
        {
          ...spec,
          queue: name,
          concurrency: ctx.concurrency,
          ...(ctx.profileDir ? { profileDir: ctx.profileDir } : {}),
        },
        jobs * LIMIT_MS_PER_JOB + 60_000,
      );
      try {
        const c0 = await sys.counters();
        const cpu0 = serverCpuMs(sys);
        const t0 = group.go();
        await q.resume();
        await group.waitFinished(jobs);
        const cpu1 = serverCpuMs(sys);
        const d = counterDelta(c0, await sys.counters());
        const reports = await group.stop();
        record(ctx, spec.key, t0, reports, cpu1 - cpu0, d);
        const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'paused');
        const left = Object.values(counts).reduce((a, b) => a + b, 0);
        if (left) ctx.log(`WARNING: ${left} jobs left in '${name}' after the drain`);
      } finally {
        await group.kill();
      }
    });
    if (spec.listen) put(ctx, `${spec.key}.events`, eventsSeen);
  } finally {
    await events?.close();
  }
}

function record(
  ctx: RunContext,
  key: string,
  t0: number,
  reports: ChildReport[],
  serverCpu: number,
  d: Record<string, number>,
): void {
  const n = ctx.jobs;
  const last = Math.max(...reports.map((r) => r.lastAt));
  const first = Math.min(...reports.filter((r) => r.firstAt).map((r) => r.firstAt));
  const workerCpu = reports.reduce((a, r) => a + r.cpuMs, 0);
  put(ctx, `${key}.rate`, rate(n, last - t0));
  put(ctx, `${key}.firstMs`, Math.round(first - t0));
  put(ctx, `${key}.workerCpuUs`, Math.round((workerCpu * 1000) / n));
  put(ctx, `${key}.workerShare`, round2(workerCpu / (last - t0)));
  put(ctx, `${key}.serverCpuUs`, Math.round((serverCpu * 1000) / n));
  if (d.zxid !== undefined) put(ctx, `${key}.txPerJob`, round2(d.zxid / n));
  if (d.packetsReceived !== undefined) put(ctx, `${key}.reqPerJob`, round2(d.packetsReceived / n));
  if (d.commands !== undefined) put(ctx, `${key}.cmdPerJob`, round2(d.commands / n));
  // ZooKeeper's own mean time per request (receipt to reply), against what the worker saw (--trace)
  if (d.writes) put(ctx, `${key}.serverWriteMs`, round2((d.writeMsSum ?? Number.NaN) / d.writes));
  if (d.reads) put(ctx, `${key}.serverReadMs`, round2((d.readMsSum ?? Number.NaN) / d.reads));
  const failed = reports.reduce((a, r) => a + r.finalFailures, 0);
  if (failed) put(ctx, `${key}.failed`, failed);
  const trace = reports[0]?.trace;
  if (trace) ctx.traces[`${ctx.sys.name}.${key}`] = trace;
}

// ---- end to end ------------------------------------------------------------------------

/** One worker process waits on an empty queue; addBulk × BULK_CHUNK; first add → last completion. */
export async function benchEndToEnd(ctx: RunContext): Promise<void> {
  const { sys, jobs } = ctx;
  ctx.log(`${sys.label} end to end: ${jobs} jobs`);
  await withQueue(ctx, 'e2e', async (q) => {
    const batches = chunks(jobs, sys.retention('remove'));
    const group = await WorkerGroup.start(
      sys,
      { queue: 'e2e', processes: 1, concurrency: ctx.concurrency },
      jobs * LIMIT_MS_PER_JOB + 60_000,
    );
    try {
      const cpu0 = serverCpuMs(sys);
      const c0 = await sys.counters();
      const t0 = group.go();
      for (const b of batches) await q.addBulk(b);
      put(ctx, 'e2e.enqueueRate', rate(jobs, clock() - t0));
      await group.waitFinished(jobs);
      const cpu1 = serverCpuMs(sys);
      const d = counterDelta(c0, await sys.counters());
      record(ctx, 'e2e', t0, await group.stop(), cpu1 - cpu0, d);
    } finally {
      await group.kill();
    }
  });
}

// ---- idle latency ------------------------------------------------------------------------

/** Warm-up jobs before the samples (JIT, first listings). */
const LATENCY_WARM = 20;

/** An idle worker; jobs added one at a time `spacingMs` apart; add-call start → processor start. */
export async function benchLatency(ctx: RunContext, samples: number, spacingMs: number): Promise<void> {
  const { sys } = ctx;
  ctx.log(`${sys.label} idle latency: ${samples} jobs, ${spacingMs} ms apart`);
  const opts = sys.retention('remove');
  await withQueue(ctx, 'latency', async (q) => {
    const group = await WorkerGroup.start(
      sys,
      { queue: 'latency', processes: 1, behaviour: 'latency', concurrency: ctx.concurrency },
      120_000 + samples * 100,
    );
    try {
      await sleep(500); // let the worker go idle on its watches / blocking reads
      const addMs: number[] = [];
      for (let i = 0; i < LATENCY_WARM + samples; i++) {
        const t = clock();
        await q.add('job', payload({ t }), opts);
        if (i >= LATENCY_WARM) addMs.push(clock() - t);
        await sleep(spacingMs);
      }
      await group.waitFinished(LATENCY_WARM + samples);
      const [report] = await group.stop();
      const lat = (report?.latencies ?? []).slice(LATENCY_WARM);
      put(ctx, 'idle.p50', round2(percentile(lat, 50)));
      put(ctx, 'idle.p90', round2(percentile(lat, 90)));
      put(ctx, 'idle.p99', round2(percentile(lat, 99)));
      put(ctx, 'idle.max', round2(Math.max(...lat)));
      put(ctx, 'idle.addP50', round2(percentile(addMs, 50)));
      put(ctx, 'idle.addP99', round2(percentile(addMs, 99)));
    } finally {
      await group.kill();
    }
  });
}
