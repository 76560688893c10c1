/**
 * Entry point of the piscina threads that run a file processor.
 *
 * The processor module's default export (or `module.exports`) is called with
 * a job object that offers `updateProgress` and `log` like the main-thread
 * Job: live progress travels to the Worker over a BroadcastChannel, and the
 * final progress and the log lines come back with the result. Errors come
 * back as data so that their name (UnrecoverableError) survives.
 * A thread that crashes or exits fails only its job; piscina replaces it.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { ThreadMessage, ThreadResult, ThreadTask } from './protocol.js';

type ProcessorFn = (job: unknown, token?: string) => unknown;
const processors = new Map<string, Promise<ProcessorFn>>();
const channels = new Map<string, BroadcastChannel>();

async function load(url: string): Promise<ProcessorFn> {
  const mod = (await import(url)) as { default?: unknown; process?: unknown };
  const fn =
    typeof mod.default === 'function' ? mod.default : typeof mod.process === 'function' ? mod.process : undefined;
  if (!fn) throw new TypeError(`processor ${url} must export a function (default export)`);
  return fn as ProcessorFn;
}

function channel(name: string): BroadcastChannel {
  let ch = channels.get(name);
  if (!ch) {
    ch = new BroadcastChannel(name);
    ch.unref();
    channels.set(name, ch);
  }
  return ch;
}

export default async function runTask(task: ThreadTask): Promise<ThreadResult> {
  let loading = processors.get(task.processor);
  if (!loading) {
    loading = load(task.processor);
    processors.set(task.processor, loading);
    loading.catch(() => processors.delete(task.processor));
  }
  const post = (kind: ThreadMessage['kind'], value: unknown) =>
    channel(task.channel).postMessage({ jobId: task.job.id, token: task.token, kind, value } satisfies ThreadMessage);
  const logs: string[] = [];
  const job = {
    ...task.job,
    token: task.token,
    async updateProgress(progress: unknown) {
      job.progress = progress as typeof job.progress;
      post('progress', progress);
    },
    async log(row: string) {
      return logs.push(String(row));
    },
  };
  try {
    const fn = await loading;
    const value = await fn(job, task.token);
    return { ok: true, value, progress: job.progress, logs };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    const unrecoverable = e.name === 'UnrecoverableError';
    return { ok: false, name: e.name, message: e.message, stack: e.stack, unrecoverable, progress: job.progress, logs };
  }
}
