/**
 * Worker process of the benchmark: `workers` Worker instances of zkq or of
 * BullMQ on one queue, in their own process (as in production).
 *
 * argv[2] is a JSON ChildConfig. Messages:
 *   child → parent  { kind: 'ready' } once every worker is connected,
 *                   { kind: 'progress', done } (jobs finished so far, at most every 20 ms),
 *                   the ChildReport after 'stop'.
 *   parent → child  { kind: 'go' } (CPU and time are counted from here), { kind: 'stop' }.
 */
import type { Worker as ZkqWorker } from '@zkq/worker';
import type { Worker as BullWorker } from 'bullmq';
import { clock } from './lib.js';

/**
 * zkq's own Worker, BullMQ on Redis without persistence, BullMQ on Redis with every write fsynced
 * (`appendfsync always`), and BullMQ's Worker on the ZooKeeper backend (@zkq/bullmq).
 */
export type SystemName = 'zkq' | 'bullmq' | 'bullmq-fsync' | 'bullmq-zk';

export interface ChildConfig {
  system: SystemName;
  /** zkq: ZooKeeper connection string. */
  zk?: string;
  /** BullMQ: Redis address. */
  redis?: { host: string; port: number };
  prefix: string;
  queue: string;
  /** inline: processor function; threaded: zkq's file processor on piscina threads. */
  processor: 'inline' | 'threaded';
  /** noop; fail the first attempt; record start latency; record the start order (data.i). */
  behaviour: 'noop' | 'fail-first' | 'latency' | 'order';
  concurrency: number;
  /** Worker instances in this process. */
  workers: number;
  threads?: number;
  /** zkq: count and time the first worker session's requests (costs a little). */
  trace?: boolean;
}

/** Per request kind: calls, ops (multi), total and mean latency. */
export interface TraceEntry {
  calls: number;
  ops: number;
  totalMs: number;
  meanMs: number;
  /** Most calls pending at once. */
  maxPending: number;
}

export interface ChildReport {
  kind: 'report';
  /** Clock readings (ms, comparable across processes): go received, first and last finish. */
  goAt: number;
  firstAt: number;
  lastAt: number;
  completed: number;
  /** Every `failed` event (retries included). */
  failedEvents: number;
  /** Jobs that failed for good. */
  finalFailures: number;
  /** CPU time of this process (all threads) since 'go', ms. */
  cpuMs: number;
  /** zkq: requests sent by the workers' sessions since they connected. */
  requests?: number;
  /** zkq: the most names one listing returned, and its path. */
  maxChildren?: number;
  maxChildrenPath?: string;
  trace?: Record<string, TraceEntry>;
  /** latency behaviour: add-call start → processor start, ms, in start order. */
  latencies?: number[];
  /** order behaviour: the most positions a job started after a later-added one, and how many did. */
  maxBehind?: number;
  startedLate?: number;
}

interface AnyWorker {
  on(event: 'completed', fn: () => void): unknown;
  on(event: 'failed', fn: (job: JobLike | undefined, err: Error) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  waitUntilReady(): Promise<unknown>;
  close(): Promise<void>;
}
interface JobLike {
  data: { t?: number; i?: number };
  attemptsMade: number;
  opts: { attempts?: number };
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as ChildConfig;
const send = (m: unknown) => process.send?.(m);
process.once('disconnect', () => process.exit(0)); // the parent went away, or is done with us

const latencies: number[] = [];
let highest = -1;
let maxBehind = 0;
let startedLate = 0;
const inline = async (job: JobLike) => {
  if (cfg.behaviour === 'latency') latencies.push(clock() - (job.data.t ?? 0));
  else if (cfg.behaviour === 'order') {
    const i = job.data.i ?? 0;
    if (i < highest) {
      startedLate++;
      maxBehind = Math.max(maxBehind, highest - i);
    } else highest = i;
  } else if (cfg.behaviour === 'fail-first' && job.attemptsMade === 0) throw new Error('first attempt fails');
  return null;
};

async function createWorker(): Promise<AnyWorker> {
  if (cfg.system === 'bullmq' || cfg.system === 'bullmq-fsync') {
    const { Worker } = await import('bullmq');
    return new Worker(cfg.queue, inline as never, {
      connection: cfg.redis as { host: string; port: number },
      prefix: cfg.prefix,
      concurrency: cfg.concurrency,
    }) as BullWorker as unknown as AnyWorker;
  }
  if (cfg.system === 'bullmq-zk') {
    const [{ withBackend }, { createZooKeeperBackend }] = await Promise.all([import('bullmq'), import('@zkq/bullmq')]);
    const { Worker } = withBackend(createZooKeeperBackend);
    return new Worker(cfg.queue, inline as never, {
      connection: { connectionString: cfg.zk as string, requestTimeout: 60_000, namespace: cfg.prefix },
      concurrency: cfg.concurrency,
    }) as unknown as AnyWorker;
  }
  const { Worker } = await import('@zkq/worker');
  const processor = cfg.processor === 'threaded' ? new URL('./processors/noop.mjs', import.meta.url) : inline;
  return new Worker(cfg.queue, processor as never, {
    connection: { connectionString: cfg.zk as string, requestTimeout: 60_000 },
    prefix: cfg.prefix,
    concurrency: cfg.concurrency,
    ...(cfg.threads ? { threads: cfg.threads } : {}),
  }) as ZkqWorker as unknown as AnyWorker;
}

let cpu0 = process.cpuUsage();
let goAt = 0;
let firstAt = 0;
let lastAt = 0;
let completed = 0;
let failedEvents = 0;
let finalFailures = 0;
const finished = () => {
  const t = clock();
  if (!firstAt) firstAt = t;
  lastAt = t;
};

const workers: AnyWorker[] = [];
for (let i = 0; i < cfg.workers; i++) {
  const w = await createWorker();
  w.on('error', (err) => process.stderr.write(`worker error: ${err.message}\n`));
  w.on('completed', () => {
    completed++;
    finished();
  });
  w.on('failed', (job, err) => {
    failedEvents++;
    if (cfg.behaviour !== 'fail-first' && failedEvents === 1) process.stderr.write(`job failed: ${err.message}\n`);
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
      finalFailures++;
      finished();
    }
  });
  workers.push(w);
}
await Promise.all(workers.map((w) => w.waitUntilReady()));

/** zkq's worker sessions (diagnostics only: stats, trace). */
type StatsSession = { stats: { requests: number; maxChildren: number; maxChildrenPath?: string } };
const sessions = async (): Promise<StatsSession[]> =>
  cfg.system === 'zkq'
    ? Promise.all(workers.map((w) => (w as unknown as { client: Promise<StatsSession> }).client))
    : [];

const trace: Record<string, TraceEntry> = {};
/** Wraps a session's request methods to count and time them. */
function traceSession(session: Record<string, unknown>): void {
  for (const method of ['multi', 'readMulti', 'getData', 'getChildren', 'exists', 'create', 'setData', 'delete']) {
    const original = session[method] as (...args: unknown[]) => Promise<unknown>;
    const entry: TraceEntry = { calls: 0, ops: 0, totalMs: 0, meanMs: 0, maxPending: 0 };
    let pending = 0;
    trace[method] = entry;
    session[method] = function (this: unknown, ...args: unknown[]) {
      const t = clock();
      entry.calls++;
      entry.ops += method === 'multi' || method === 'readMulti' ? (args[0] as unknown[]).length : 1;
      entry.maxPending = Math.max(entry.maxPending, ++pending);
      const done = () => {
        pending--;
        entry.totalMs += clock() - t;
      };
      const p = original.apply(this, args);
      p.then(done, done);
      return p;
    };
  }
}
if (cfg.trace && cfg.system === 'zkq') {
  const [first] = await sessions();
  if (first) traceSession(first as unknown as Record<string, unknown>);
}

let reported = 0;
const progress = setInterval(() => {
  const done = completed + finalFailures;
  if (done === reported) return;
  reported = done;
  send({ kind: 'progress', done });
}, 20);

process.on('message', (m: { kind: string }) => {
  if (m.kind === 'go') {
    cpu0 = process.cpuUsage();
    goAt = clock();
  } else if (m.kind === 'stop') void stop();
});
send({ kind: 'ready' });

async function stop(): Promise<void> {
  clearInterval(progress);
  const cpu = process.cpuUsage(cpu0);
  const stats = (await sessions()).map((s) => s.stats);
  const widest = stats.reduce<StatsSession['stats'] | undefined>(
    (a, s) => (!a || s.maxChildren > a.maxChildren ? s : a),
    undefined,
  );
  const report: ChildReport = {
    kind: 'report',
    goAt,
    firstAt,
    lastAt,
    completed,
    failedEvents,
    finalFailures,
    cpuMs: (cpu.user + cpu.system) / 1000,
    ...(widest
      ? {
          requests: stats.reduce((a, s) => a + s.requests, 0),
          maxChildren: widest.maxChildren,
          ...(widest.maxChildrenPath ? { maxChildrenPath: widest.maxChildrenPath } : {}),
        }
      : {}),
    ...(cfg.trace && cfg.system === 'zkq'
      ? {
          trace: Object.fromEntries(
            Object.entries(trace).map(([k, e]) => [k, { ...e, meanMs: e.calls ? e.totalMs / e.calls : 0 }]),
          ),
        }
      : {}),
    ...(cfg.behaviour === 'latency' ? { latencies } : {}),
    ...(cfg.behaviour === 'order' ? { maxBehind, startedLate } : {}),
  };
  send(report);
  await Promise.all(workers.map((w) => w.close()));
  process.disconnect?.();
}
