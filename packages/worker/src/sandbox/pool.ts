/**
 * ThreadPool: runs a file processor on a piscina pool of worker threads,
 * `jobsPerThread` jobs at once on each.
 *
 * One job per thread: the task is abortable, so a cancel, a lost claim or a
 * forced close terminates its thread (piscina starts another). More than one:
 * piscina runs only non-abortable tasks side by side, so an abort is a message
 * instead: the processor's own signal fires in the thread, and the Worker
 * stops waiting for the task at once (its result is dropped); the task ends on
 * its own time. Either way a thread that crashes fails every job it runs.
 */

import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import type { JobJson } from '@zkq/core';
import { Piscina } from 'piscina';
import type { ThreadAbort, ThreadEnded, ThreadProgress, ThreadResult, ThreadTask } from './protocol.js';

// Source checkouts run TypeScript directly; published builds run the compiled file.
const THREAD_ENTRY = new URL(`./thread-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** Error thrown by a processor inside a thread, rebuilt on the main thread. */
export class ProcessorThreadError extends Error {
  constructor(result: Extract<ThreadResult, { ok: false }>) {
    super(result.message);
    this.name = result.name;
    if (result.stack) this.stack = result.stack;
  }
}

export interface ThreadPoolOptions {
  /** The Worker's concurrency: the default split over threads. */
  concurrency: number;
  /** Default: the CPU count, at most `concurrency`. */
  threads?: number | undefined;
  /** Default: `ceil(concurrency / threads)`, so all of `concurrency` can run at once. */
  jobsPerThread?: number | undefined;
}

export class ThreadPool {
  private readonly pool: Piscina;
  /** Main thread to threads: aborts of tasks shared with others (every thread listens). */
  private readonly aborts: BroadcastChannel;
  readonly processorUrl: string;
  readonly maxThreads: number;
  readonly jobsPerThread: number;
  /** Runs started: each run's key (ThreadTask.key). */
  private runs = 0;
  /** Where each run's live progress goes, by run key, until its last progress message is in. */
  private readonly progressTo = new Map<string, (value: unknown) => void>();

  constructor(processor: string | URL, opts: ThreadPoolOptions) {
    this.processorUrl =
      processor instanceof URL
        ? processor.href
        : /^[a-z]+:\/\//i.test(processor)
          ? processor
          : pathToFileURL(processor).href;
    this.maxThreads = opts.threads ?? Math.max(1, Math.min(availableParallelism(), opts.concurrency));
    this.jobsPerThread = opts.jobsPerThread ?? Math.ceil(opts.concurrency / this.maxThreads);
    const channel = `zkq-${randomBytes(6).toString('hex')}`;
    this.pool = new Piscina({
      filename: fileURLToPath(THREAD_ENTRY),
      minThreads: 1,
      maxThreads: this.maxThreads,
      concurrentTasksPerWorker: this.jobsPerThread,
      // a thread of shared tasks keeps its event loop turning between them ('sync' blocks it in
      // Atomics.wait once idle): in a pool-only measure, about twice the tasks per second
      atomics: this.jobsPerThread === 1 ? 'sync' : 'async',
      idleTimeout: 30_000,
      workerData: { channel },
    });
    // progress travels point to point on each thread's port (piscina re-emits it): on the
    // channel, every other thread would receive and decode it too
    this.pool.on('message', (m: ThreadProgress | ThreadEnded | undefined) => {
      if (m?.kind === 'progress') this.progressTo.get(m.key)?.(m.value);
      else if (m?.kind === 'ended') this.progressTo.delete(m.key);
    });
    this.aborts = new BroadcastChannel(channel);
    this.aborts.unref();
  }

  /**
   * Runs one job; resolves with the processor's result, rejects with its
   * error, or with the signal's reason once it fires. `report` receives the
   * attempt's final progress and log lines first; `onProgress` each live
   * progress of this run (none once the pool stopped waiting for it: a run
   * aborted on a shared thread may go on, and its progress is dropped).
   */
  async run(
    job: JobJson,
    token: string,
    signal: AbortSignal,
    report: (progress: unknown, logs: string[]) => void,
    onProgress: (value: unknown) => void = () => {},
  ): Promise<unknown> {
    const task: ThreadTask = { processor: this.processorUrl, job, token, key: String(++this.runs) };
    this.progressTo.set(task.key, onProgress);
    let result: ThreadResult;
    try {
      result = (
        this.jobsPerThread === 1 ? await this.pool.run(task, { signal }) : await this.runShared(task, signal)
      ) as ThreadResult;
    } catch (err) {
      this.progressTo.delete(task.key);
      throw err;
    }
    // a run that posted progress is forgotten at its ThreadEnded, which follows the progress
    if (!result.progressed) this.progressTo.delete(task.key);
    report(result.progress, result.logs);
    if (result.ok) return result.value;
    throw new ProcessorThreadError(result);
  }

  /**
   * A task beside others on its thread. The flag covers an abort before the
   * task reaches a thread (still queued, or its thread not started): the
   * thread reads it as the task starts and then skips the processor; after
   * that, the message on the channel reaches the running processor.
   */
  private runShared(task: ThreadTask, signal: AbortSignal): Promise<unknown> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const flag = new Int32Array(new SharedArrayBuffer(4));
    task.aborted = flag.buffer as SharedArrayBuffer;
    const running = this.pool.run(task);
    running.catch(() => undefined); // dropped after an abort; a forced close rejects it later
    const abort = () => {
      Atomics.store(flag, 0, 1);
      // without a reason the thread's signal makes its own AbortError: a DOMException clones as a bare object
      const reason = signal.reason instanceof DOMException ? undefined : signal.reason;
      const m: ThreadAbort = { kind: 'abort', key: task.key, reason };
      try {
        this.aborts.postMessage(m);
      } catch {
        this.aborts.postMessage({ ...m, reason: String(signal.reason) }); // a reason that does not clone
      }
    };
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        abort();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      running.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  async close(): Promise<void> {
    this.aborts.close();
    await this.pool.destroy();
  }
}
