/**
 * Entry point of the piscina threads that run a file processor.
 *
 * The processor module's default export (or `module.exports`) is called as
 * `(job, token, signal)`, with a job object that offers `updateProgress` and
 * `log` like the main-thread Job: live progress travels to the Worker as it
 * is reported, and the final progress and the log lines come back with the
 * result. A progress the Worker would refuse is refused at the processor's
 * call, as an inline processor's is, with the same error classes and codes
 * (InvalidJobDataError, PayloadTooLargeError: `@zkq/core`'s, as this thread
 * loads it), and is neither sent nor kept. Errors come back as data so that
 * their name (UnrecoverableError) and code survive. A thread that crashes or
 * exits fails the jobs it runs; piscina replaces it.
 *
 * Two kinds of task arrive here. A job alone on its thread is a task of its
 * own (aborted by ending the thread; its progress goes on the thread's
 * parent port). Jobs that share a thread arrive through a lane: one task
 * that lives as long as the pool, with a port on which the main thread sends
 * jobs and aborts in batches, and this thread sends back progress at once
 * and the results gathered per turn of its event loop. Either way jobs
 * arrive as bytes (protocol.ts, ThreadJobs), a job's record as claimed,
 * decoded here into the job the processor gets: Job.toJSON()'s fields.
 */
import { parentPort } from 'node:worker_threads';
import { checkProgress } from '@zkq/core/progress';
import {
  type DecodedTask,
  decodeTasks,
  jobJson,
  type LaneIn,
  type LaneOut,
  type ThreadEnded,
  type ThreadJobs,
  type ThreadLane,
  type ThreadProgress,
  type ThreadResult,
} from './protocol.js';

type ProcessorFn = (job: unknown, token?: string, signal?: AbortSignal) => unknown;
const processors = new Map<string, Promise<ProcessorFn>>();

async function load(url: string): Promise<ProcessorFn> {
  const mod = (await import(url)) as { default?: unknown; process?: unknown };
  const fn =
    typeof mod.default === 'function' ? mod.default : typeof mod.process === 'function' ? mod.process : undefined;
  if (!fn) throw new TypeError(`processor ${url} must export a function (default export)`);
  return fn as ProcessorFn;
}

function processorOf(url: string): Promise<ProcessorFn> {
  let loading = processors.get(url);
  if (!loading) {
    loading = load(url);
    processors.set(url, loading);
    loading.catch(() => processors.delete(url));
  }
  return loading;
}

/** Runs one job; `progress` receives its live progress. */
async function runJob(
  processor: string,
  task: DecodedTask,
  signal: AbortSignal,
  progress: (value: unknown) => void,
): Promise<ThreadResult> {
  const loading = processorOf(processor);
  const logs: string[] = [];
  const job = {
    ...jobJson(task.job),
    token: task.token,
    async updateProgress(value: unknown) {
      checkProgress(value); // what the Worker would refuse is refused here, at the call
      progress(value); // throws on a value that does not clone: the final progress stays the last that did
      job.progress = value as typeof job.progress;
    },
    async log(row: string) {
      return logs.push(String(row));
    },
  };
  try {
    const fn = await loading;
    // aborted before it started: the Worker has stopped waiting for it, so it does not start
    if (signal.aborted) return failure(new Error(`job ${task.job.id} aborted before it started`), job, logs);
    const value = await fn(job, task.token, signal);
    return { ok: true, value, progress: job.progress, logs };
  } catch (err) {
    return failure(err, job, logs);
  }
}

function failure(err: unknown, job: { progress?: unknown }, logs: string[]): ThreadResult {
  const e = err instanceof Error ? err : new Error(String(err));
  const unrecoverable = e.name === 'UnrecoverableError';
  const { code } = e as { code?: unknown };
  return {
    ok: false,
    name: e.name,
    message: e.message,
    stack: e.stack,
    ...(typeof code === 'string' ? { code } : {}),
    unrecoverable,
    progress: job.progress,
    logs,
  };
}

/**
 * The failure of a job whose result does not clone. Its logs are strings;
 * its final progress cloned when it was reported, but the processor may
 * have changed that object since: then the failure goes without it.
 */
function uncloneable(err: unknown, result: ThreadResult): ThreadResult {
  const failed = failure(err, result, result.logs);
  try {
    structuredClone(failed.progress);
  } catch {
    failed.progress = undefined;
  }
  return failed;
}

/**
 * A job alone on its thread: its progress on the parent port, then
 * ThreadEnded after the last of it. Its result is cloned here first, so that
 * one that does not clone fails with the reason (piscina would hand back a
 * bare object).
 */
async function runAlone(processor: string, task: DecodedTask): Promise<ThreadResult> {
  const { key } = task;
  let progressed = false;
  let result = await runJob(processor, task, new AbortController().signal, (value) => {
    parentPort?.postMessage({ kind: 'progress', key, value } satisfies ThreadProgress);
    progressed = true;
  });
  try {
    structuredClone(result);
  } catch (err) {
    result = uncloneable(err, result);
  }
  if (progressed) {
    result.progressed = true;
    parentPort?.postMessage({ kind: 'ended', key } satisfies ThreadEnded);
  }
  return result;
}

/**
 * Serves a lane until the pool ends the thread. Results go in batches, one
 * message per turn; a result that does not clone fails its own job alone.
 * Progress goes at once, so that a value that does not clone rejects the
 * processor's `updateProgress` call, and always before its job's result.
 */
function serve(port: ThreadLane['port']): Promise<never> {
  const running = new Map<string, AbortController>();
  let results: LaneOut[] = [];
  const post = (batch: LaneOut[]) => {
    try {
      port.postMessage(batch);
    } catch {
      for (const m of batch) {
        try {
          port.postMessage([m]);
        } catch (err) {
          if (m.kind === 'result') port.postMessage([{ ...m, result: uncloneable(err, m.result) }]);
        }
      }
    }
  };
  const flush = () => {
    const batch = results;
    results = [];
    if (batch.length > 0) post(batch);
  };
  const send = (m: LaneOut) => {
    results.push(m);
    if (results.length === 1) setImmediate(flush);
  };
  // a job that ended in the turn its thread crashed or exited in has its result sent still
  process.once('exit', () => {
    results.push({ kind: 'exiting' });
    flush();
  });
  port.on('message', (m: LaneIn) => {
    if (m.kind === 'abort') {
      running.get(m.key)?.abort(m.reason);
      return;
    }
    for (const task of decodeTasks(m.jobs)) {
      const { key } = task;
      const controller = new AbortController();
      running.set(key, controller);
      const progress = (value: unknown) => port.postMessage([{ kind: 'progress', key, value }] satisfies LaneOut[]);
      void runJob(m.processor, task, controller.signal, progress).then((result) => {
        running.delete(key);
        send({ kind: 'result', key, result });
      });
    }
  });
  return new Promise<never>(() => undefined);
}

export default function runTask(task: ThreadJobs | ThreadLane): Promise<ThreadResult> {
  return 'port' in task ? serve(task.port) : runAlone(task.processor, decodeTasks(task.jobs)[0] as DecodedTask);
}
