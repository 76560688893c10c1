/** Messages between a Worker and the threads that run a file processor. */
import type { JobJson } from '@zkq/core';

/** One job handed to a thread. */
export interface ThreadTask {
  /** URL of the processor module. */
  processor: string;
  job: JobJson;
  token: string;
  /**
   * This run's key, unique in its pool: a job added again under the id of a
   * removed one is claimed at the same token, while the first job's aborted
   * run may still go on in the same thread.
   */
  key: string;
  /**
   * Int32 flag set to 1 when the job is aborted, for a task that shares its
   * thread (a task alone on its thread is aborted by ending the thread).
   */
  aborted?: SharedArrayBuffer;
}

/** What the pool hands each thread (piscina's workerData). */
export interface ThreadData {
  /** BroadcastChannel name on which the main thread posts ThreadAbort. */
  channel: string;
}

/**
 * A thread's answer. Errors travel as data, so their name (UnrecoverableError...)
 * survives; the final progress and the log lines come with it, because the
 * live progress messages travel on another port and may arrive later.
 */
export type ThreadResult = {
  progress?: unknown;
  logs: string[];
  /** The run posted live progress: its ThreadEnded follows them on the thread's port. */
  progressed?: true;
} & (
  | { ok: true; value: unknown }
  | { ok: false; name: string; message: string; stack?: string; unrecoverable: boolean }
);

/**
 * Live progress from a thread (on its parent port), by run key: a run that
 * lingers after its attempt ended (aborted on a shared thread) reports to its
 * own attempt, never to a later one of the same job id and token.
 */
export interface ThreadProgress {
  kind: 'progress';
  key: string;
  value: unknown;
}

/**
 * The last message of a run that posted progress, on the same port, so after
 * all of them (its result travels on another port and may arrive first).
 */
export interface ThreadEnded {
  kind: 'ended';
  key: string;
}

/** The main thread aborts a job's attempt: its processor's signal fires with `reason`. */
export interface ThreadAbort {
  kind: 'abort';
  /** The run's key (ThreadTask.key). */
  key: string;
  reason: unknown;
}
