/**
 * ThreadPool: runs a file processor on a piscina pool of worker threads,
 * `jobsPerThread` jobs at once on each.
 *
 * One job per thread: each job is a piscina task, abortable, so a cancel, a
 * lost claim or a forced close terminates its thread (piscina starts
 * another). More than one: each thread serves one lane, a task that lives as
 * long as the pool; the pool hands every job to the lane with the fewest
 * jobs (a job waits when every lane has `jobsPerThread`), and jobs, aborts,
 * progress and results travel on the lane's port in batches, one message
 * per turn of the event loop each way, where a task per job would cost two
 * messages and piscina's bookkeeping each. An abort there is a message: the
 * processor's own signal fires in the thread, and the Worker stops waiting
 * for the job at once (its result is dropped); the job keeps its place on
 * the thread until it ends. Either way a thread that crashes fails every job
 * it runs.
 *
 * Jobs travel as bytes: a message's jobs are one ArrayBuffer of JSON, moved
 * to the thread (protocol.ts, ThreadJobs), a claimed job's record as the
 * claim wrote it. Results and progress come back in a structured clone.
 */

import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import {
  encodeTasks,
  type LaneIn,
  type LaneOut,
  type ThreadAbort,
  type ThreadEnded,
  type ThreadJob,
  type ThreadJobs,
  type ThreadProgress,
  type ThreadResult,
  type ThreadTask,
} from './protocol.js';

/** What a shared run's job is once sent: its thread has the bytes. */
const SENT: ThreadJob = new Uint8Array(0);

// Source checkouts run TypeScript directly; published builds run the compiled file.
const THREAD_ENTRY = new URL(`./thread-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** Error thrown by a processor inside a thread, rebuilt on the main thread: its name, message, stack and code. */
export class ProcessorThreadError extends Error {
  /** The thrown error's `code` when it had a string one (a ZkqError's: `ZKQ_INVALID_JOB_DATA`...). */
  readonly code: string | undefined;
  constructor(result: Extract<ThreadResult, { ok: false }>) {
    super(result.message);
    this.name = result.name;
    this.code = result.code;
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

/** A job handed to a lane, until its result is in. */
interface LaneRun {
  task: ThreadTask;
  signal: AbortSignal;
  onProgress: (value: unknown) => void;
  /** Settles the caller's promise (once: an abort settles it before the result). */
  settle: (result: ThreadResult | { error: unknown }) => void;
  /** The caller stopped waiting (aborted): progress and result are dropped. */
  dropped: boolean;
  onAbort: () => void;
}

/** One thread's share of the jobs: its port, and the jobs it runs or is about to. */
interface Lane {
  port: MessagePort;
  /** Jobs sent or about to be, by key, until their result is in: what the thread holds. */
  runs: Map<string, LaneRun>;
  /** Jobs of this turn, sent together at its end. */
  outgoing: ThreadTask[];
  /** Its thread said it crashed or exited: no more jobs for it (a new lane takes its place). */
  exiting: boolean;
}

export class ThreadPool {
  private readonly pool: Piscina;
  readonly processorUrl: string;
  readonly maxThreads: number;
  readonly jobsPerThread: number;
  /** Runs started: each run's key (ThreadTask.key). */
  private runs = 0;
  /** Where each lone run's live progress goes, by run key, until its last progress message is in. */
  private readonly progressTo = new Map<string, (value: unknown) => void>();
  /** Shared threads: one lane each, made at the first job. */
  private lanes: Lane[] = [];
  /** Shared jobs waiting for a place on a lane, in order. */
  private waiting: LaneRun[] = [];
  private flushing = false;
  private closed = false;

  constructor(processor: string | URL, opts: ThreadPoolOptions) {
    this.processorUrl =
      processor instanceof URL
        ? processor.href
        : /^[a-z]+:\/\//i.test(processor)
          ? processor
          : pathToFileURL(processor).href;
    this.maxThreads = opts.threads ?? Math.max(1, Math.min(availableParallelism(), opts.concurrency));
    this.jobsPerThread = opts.jobsPerThread ?? Math.ceil(opts.concurrency / this.maxThreads);
    this.pool = new Piscina({
      filename: fileURLToPath(THREAD_ENTRY),
      minThreads: 1,
      maxThreads: this.maxThreads,
      // a lane is one task per thread for the pool's life; a lone job is one task on its thread
      concurrentTasksPerWorker: 1,
      atomics: this.jobsPerThread === 1 ? 'sync' : 'disabled',
      idleTimeout: 30_000,
    });
    // live progress of lone jobs travels point to point on each thread's parent port (piscina re-emits it)
    this.pool.on('message', (m: ThreadProgress | ThreadEnded | undefined) => {
      if (m?.kind === 'progress') this.progressTo.get(m.key)?.(m.value);
      else if (m?.kind === 'ended') this.progressTo.delete(m.key);
    });
  }

  /**
   * Runs one job, given as its record's bytes (JSON) or as the job itself;
   * resolves with the processor's result, rejects with its error, or with
   * the signal's reason once it fires. `report` receives the
   * attempt's final progress and log lines first; `onProgress` each live
   * progress of this run (none once the pool stopped waiting for it: a run
   * aborted on a shared thread may go on, and its progress is dropped).
   */
  async run(
    job: ThreadJob,
    token: string,
    signal: AbortSignal,
    report: (progress: unknown, logs: string[]) => void,
    onProgress: (value: unknown) => void = () => {},
  ): Promise<unknown> {
    const task: ThreadTask = { job, token, key: String(++this.runs) };
    const result =
      this.jobsPerThread === 1
        ? await this.runAlone(task, signal, onProgress)
        : await this.runShared(task, signal, onProgress);
    report(result.progress, result.logs);
    if (result.ok) return result.value;
    throw new ProcessorThreadError(result);
  }

  /** A job on a thread of its own: a piscina task, aborted by ending the thread. */
  private async runAlone(
    task: ThreadTask,
    signal: AbortSignal,
    onProgress: (value: unknown) => void,
  ): Promise<ThreadResult> {
    this.progressTo.set(task.key, onProgress);
    let result: ThreadResult;
    try {
      const m: ThreadJobs = { processor: this.processorUrl, jobs: encodeTasks([task]) };
      result = (await this.pool.run(m, { signal, transferList: [m.jobs] })) as ThreadResult;
    } catch (err) {
      this.progressTo.delete(task.key);
      throw err;
    }
    // a run that posted progress is forgotten at its ThreadEnded, which follows the progress
    if (!result.progressed) this.progressTo.delete(task.key);
    return result;
  }

  /** A job beside others on a shared thread (see the class comment). */
  private runShared(
    task: ThreadTask,
    signal: AbortSignal,
    onProgress: (value: unknown) => void,
  ): Promise<ThreadResult> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.reject(new Error('the thread pool is closed'));
    return new Promise((resolve, reject) => {
      let settled = false;
      const run: LaneRun = {
        task,
        signal,
        onProgress,
        dropped: false,
        settle: (r) => {
          if (settled) return;
          settled = true;
          signal.removeEventListener('abort', run.onAbort);
          if ('error' in r) reject(r.error);
          else resolve(r);
        },
        onAbort: () => this.abort(run),
      };
      signal.addEventListener('abort', run.onAbort, { once: true });
      this.waiting.push(run);
      this.dispatch();
    });
  }

  /** Hands waiting jobs to the lanes with room, fewest jobs first; sends them at the end of the turn. */
  private dispatch(): void {
    if (this.lanes.length === 0) this.lanes = Array.from({ length: this.maxThreads }, () => this.openLane());
    let placed = false;
    while (this.waiting.length > 0) {
      let lane: Lane | undefined;
      for (const l of this.lanes)
        if (!l.exiting && l.runs.size < this.jobsPerThread && (!lane || l.runs.size < lane.runs.size)) lane = l;
      if (!lane) break; // the rest wait; those placed go now
      const run = this.waiting.shift() as LaneRun;
      lane.runs.set(run.task.key, run);
      lane.outgoing.push(run.task);
      placed = true;
    }
    if (!placed || this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      for (const lane of this.lanes) {
        if (lane.outgoing.length === 0) continue;
        const m: LaneIn = { kind: 'run', processor: this.processorUrl, jobs: encodeTasks(lane.outgoing) };
        // the thread has them now: a run that lingers after its abort holds no copy here
        for (const task of lane.outgoing) task.job = SENT;
        lane.outgoing = [];
        lane.port.postMessage(m, [m.jobs]);
      }
    });
  }

  /** Stops waiting for an aborted job: one not sent yet never starts; a sent one gets the abort in its thread. */
  private abort(run: LaneRun): void {
    const { signal, task } = run;
    run.dropped = true;
    run.settle({ error: signal.reason });
    const waiting = this.waiting.indexOf(run);
    if (waiting >= 0) {
      this.waiting.splice(waiting, 1);
      return;
    }
    const lane = this.lanes.find((l) => l.runs.get(task.key) === run);
    if (!lane) return;
    const unsent = lane.outgoing.indexOf(task);
    if (unsent >= 0) {
      lane.outgoing.splice(unsent, 1);
      lane.runs.delete(task.key);
      this.dispatch();
      return;
    }
    // without a reason the thread's signal makes its own AbortError: a DOMException clones as a bare object
    const reason = signal.reason instanceof DOMException ? undefined : signal.reason;
    const m: ThreadAbort = { kind: 'abort', key: task.key, reason };
    try {
      lane.port.postMessage(m);
    } catch {
      lane.port.postMessage({ ...m, reason: String(signal.reason) }); // a reason that does not clone
    }
  }

  /** A lane: a task that serves a thread's shared jobs for the pool's life (again on a new thread if it dies). */
  private openLane(): Lane {
    const { port1, port2 } = new MessageChannel();
    const lane: Lane = { port: port1, runs: new Map(), outgoing: [], exiting: false };
    const take = (batch: LaneOut[]) => {
      for (const m of batch) {
        if (m.kind === 'exiting') {
          lane.exiting = true;
          continue;
        }
        const run = lane.runs.get(m.key);
        if (!run) continue;
        if (m.kind === 'progress') {
          if (!run.dropped) run.onProgress(m.value);
          continue;
        }
        lane.runs.delete(m.key);
        run.settle(m.result);
      }
    };
    port1.on('message', (batch: LaneOut[]) => {
      take(batch);
      this.dispatch(); // places freed
    });
    this.pool.run({ port: port2 }, { transferList: [port2] }).catch((err: unknown) => {
      // the thread crashed or exited (or the pool closed): the results it sent last count, whether or
      // not their message was delivered yet; its other jobs fail, a new lane takes its place
      for (let m = receiveMessageOnPort(port1); m; m = receiveMessageOnPort(port1)) take(m.message as LaneOut[]);
      port1.close();
      const at = this.lanes.indexOf(lane);
      for (const run of lane.runs.values()) run.settle({ error: err });
      lane.runs.clear();
      if (at < 0 || this.closed) return;
      this.lanes[at] = this.openLane();
      this.dispatch();
    });
    return lane;
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const run of this.waiting) run.settle({ error: new Error('the thread pool is closed') });
    this.waiting = [];
    await this.pool.destroy();
  }
}
