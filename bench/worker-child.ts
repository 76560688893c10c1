/**
 * One Worker in its own process, for the drain and latency benchmarks.
 *
 * argv[2] is a JSON ChildConfig. The child reports over IPC:
 *   { kind: 'ready' } once connected, then
 *   { kind: 'done', ... } after `expect` completions (see ChildReport).
 */
import { Worker } from '@zkq/worker';
import { clock } from './lib.js';

export interface ChildConfig {
  connectionString: string;
  prefix: string;
  queue: string;
  /** inline: processor function; threaded: file processor on piscina threads. */
  processor: 'inline' | 'threaded';
  /** Inline processor behaviour: noop, fail the first attempt, or record start latency. */
  behaviour: 'noop' | 'fail-first' | 'latency';
  concurrency: number;
  threads?: number;
  /** Completions to wait for. */
  expect: number;
  /** Count and time the worker session's requests (for diagnosis; costs a little). */
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
  kind: 'done';
  /** Worker constructed → ready (connected, registered). */
  readyMs: number;
  /** Worker constructed → first completion. */
  firstMs: number;
  /** Worker constructed → last completion. */
  lastMs: number;
  completed: number;
  /** Every `failed` event (retries included). */
  failedEvents: number;
  /** Jobs that failed for good. */
  finalFailures: number;
  /** CPU time of this process (all threads), ms. */
  cpuUserMs: number;
  cpuSystemMs: number;
  /** Requests sent by the worker's session. */
  requests: number;
  trace?: Record<string, TraceEntry>;
  /** latency behaviour: add-call start → processor start, ms, one per job. */
  latencies?: number[];
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as ChildConfig;
const send = (m: unknown) => process.send?.(m);
let finished = false;
process.once('disconnect', () => {
  if (!finished) process.exit(1); // the parent went away
});

const latencies: number[] = [];
const inline = async (job: { data: { t?: number }; attemptsMade: number }) => {
  if (cfg.behaviour === 'latency') latencies.push(clock() - (job.data.t ?? 0));
  else if (cfg.behaviour === 'fail-first' && job.attemptsMade === 0) throw new Error('first attempt fails');
  return null;
};
const processor = cfg.processor === 'threaded' ? new URL('./processors/noop.mjs', import.meta.url) : inline;

const cpu0 = process.cpuUsage();
const t0 = clock();
let readyAt = 0;
let firstAt = 0;
let completed = 0;
let failedEvents = 0;

const worker = new Worker(cfg.queue, processor, {
  connection: { connectionString: cfg.connectionString, requestTimeout: 60_000 },
  prefix: cfg.prefix,
  concurrency: cfg.concurrency,
  ...(cfg.threads ? { threads: cfg.threads } : {}),
});
worker.on('error', (err) => process.stderr.write(`worker error: ${err.message}\n`));
let finalFailures = 0;
worker.on('failed', (job, err) => {
  failedEvents++;
  if (cfg.behaviour !== 'fail-first' && failedEvents === 1) process.stderr.write(`job failed: ${err.message}\n`);
  if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
    finalFailures++;
    if (completed + finalFailures === cfg.expect) void finish();
  }
});
const trace: Record<string, TraceEntry> = {};
/** Wraps the worker session's request methods to count and time them. */
function traceSession(): void {
  const session = (worker as unknown as { session: Record<string, unknown> }).session;
  for (const method of ['multi', 'getData', 'getChildren', 'exists', 'create', 'setData', 'delete']) {
    const original = session[method] as (...args: unknown[]) => Promise<unknown>;
    const entry: TraceEntry = { calls: 0, ops: 0, totalMs: 0, meanMs: 0, maxPending: 0 };
    let pending = 0;
    trace[method] = entry;
    session[method] = function (this: unknown, ...args: unknown[]) {
      const t = clock();
      entry.calls++;
      entry.ops += method === 'multi' ? (args[0] as unknown[]).length : 1;
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

worker.on('ready', () => {
  readyAt = clock();
  if (cfg.trace) traceSession();
  send({ kind: 'ready' });
});
worker.on('completed', () => {
  completed++;
  if (completed === 1) firstAt = clock();
  if (completed + finalFailures === cfg.expect) void finish();
});

async function finish(): Promise<void> {
  finished = true;
  const lastAt = clock();
  const cpu = process.cpuUsage(cpu0);
  const session = (worker as unknown as { session?: { stats: { requests: number } } }).session;
  const report: ChildReport = {
    kind: 'done',
    readyMs: readyAt - t0,
    firstMs: firstAt - t0,
    lastMs: lastAt - t0,
    completed,
    failedEvents,
    finalFailures,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    requests: session?.stats.requests ?? 0,
    ...(cfg.trace
      ? {
          trace: Object.fromEntries(
            Object.entries(trace).map(([k, e]) => [k, { ...e, meanMs: e.calls ? e.totalMs / e.calls : 0 }]),
          ),
        }
      : {}),
    ...(cfg.behaviour === 'latency' ? { latencies } : {}),
  };
  send(report);
  await worker.close();
  process.disconnect?.();
}
