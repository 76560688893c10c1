/**
 * Entry point of the piscina threads that run a file processor.
 *
 * The processor module's default export (or `module.exports`) is called as
 * `(job, token, signal)`, with a job object that offers `updateProgress` and
 * `log` like the main-thread Job: live progress travels to the Worker on the
 * thread's parent port, and the final progress and the log lines come back
 * with the result. Errors come back as data so that their name
 * (UnrecoverableError) survives. The signal fires when the main thread aborts
 * a job that shares its thread (a job alone on its thread is aborted by ending
 * the thread). A thread that crashes or exits fails the jobs it runs; piscina
 * replaces it.
 */
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import type { ThreadAbort, ThreadData, ThreadEnded, ThreadProgress, ThreadResult, ThreadTask } from './protocol.js';

type ProcessorFn = (job: unknown, token?: string, signal?: AbortSignal) => unknown;
const processors = new Map<string, Promise<ProcessorFn>>();
/** The signals of the jobs running here, by run key. */
const running = new Map<string, AbortController>();

// Listening from the start: an abort posted after a task's flag was read finds it here.
const { channel } = (workerData ?? {}) as Partial<ThreadData>;
if (channel) {
  const aborts = new BroadcastChannel(channel);
  aborts.unref();
  aborts.onmessage = (e) => {
    const m = (e as { data: ThreadAbort }).data;
    if (m?.kind === 'abort') running.get(m.key)?.abort(m.reason);
  };
}

async function load(url: string): Promise<ProcessorFn> {
  const mod = (await import(url)) as { default?: unknown; process?: unknown };
  const fn =
    typeof mod.default === 'function' ? mod.default : typeof mod.process === 'function' ? mod.process : undefined;
  if (!fn) throw new TypeError(`processor ${url} must export a function (default export)`);
  return fn as ProcessorFn;
}

export default async function runTask(task: ThreadTask): Promise<ThreadResult> {
  let loading = processors.get(task.processor);
  if (!loading) {
    loading = load(task.processor);
    processors.set(task.processor, loading);
    loading.catch(() => processors.delete(task.processor));
  }
  const { key } = task;
  const controller = new AbortController();
  running.set(key, controller);
  if (task.aborted && Atomics.load(new Int32Array(task.aborted), 0) === 1) controller.abort();
  const logs: string[] = [];
  let progressed = false;
  const job = {
    ...task.job,
    token: task.token,
    async updateProgress(progress: unknown) {
      job.progress = progress as typeof job.progress;
      progressed = true;
      parentPort?.postMessage({ kind: 'progress', key, value: progress } satisfies ThreadProgress);
    },
    async log(row: string) {
      return logs.push(String(row));
    },
  };
  let result: ThreadResult;
  try {
    const fn = await loading;
    // aborted before it started: the Worker has stopped waiting for it, so it does not start
    if (controller.signal.aborted) return failure(new Error(`job ${task.job.id} aborted before it started`), job, logs);
    const value = await fn(job, task.token, controller.signal);
    result = { ok: true, value, progress: job.progress, logs };
  } catch (err) {
    result = failure(err, job, logs);
  } finally {
    running.delete(key);
  }
  if (progressed) {
    result.progressed = true;
    parentPort?.postMessage({ kind: 'ended', key } satisfies ThreadEnded);
  }
  return result;
}

function failure(err: unknown, job: { progress?: unknown }, logs: string[]): ThreadResult {
  const e = err instanceof Error ? err : new Error(String(err));
  const unrecoverable = e.name === 'UnrecoverableError';
  return { ok: false, name: e.name, message: e.message, stack: e.stack, unrecoverable, progress: job.progress, logs };
}
