/** Messages between a Worker and the threads that run a file processor. */
import type { MessagePort } from 'node:worker_threads';
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
}

/**
 * The task that serves a thread's shared jobs: it lives as long as the pool,
 * and jobs, aborts and results travel as batches on its port (one message
 * per turn of either event loop, not one task per job).
 */
export interface ThreadLane {
  port: MessagePort;
}

/** Main thread to a lane's thread: jobs to start, an abort. */
export type LaneIn = { kind: 'run'; tasks: ThreadTask[] } | ThreadAbort;

/**
 * A lane's thread to the main thread: live progress and each job's result,
 * in the order they happened; last, as the thread crashes or exits, that it
 * goes (the results before are its last; no job is to be handed to it).
 */
export type LaneOut = ThreadProgress | { kind: 'result'; key: string; result: ThreadResult } | { kind: 'exiting' };

/**
 * A thread's answer. Errors travel as data, so their name (UnrecoverableError...)
 * survives; the final progress and the log lines come with it, because a
 * task alone on its thread sends its live progress on another port, which
 * may deliver it later.
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
 * The last message of a task alone on its thread that posted progress, on
 * the same port, so after all of them (its result travels on another port
 * and may arrive first).
 */
export interface ThreadEnded {
  kind: 'ended';
  key: string;
}

/** The main thread aborts a shared job's attempt: its processor's signal fires with `reason`. */
export interface ThreadAbort {
  kind: 'abort';
  /** The run's key (ThreadTask.key). */
  key: string;
  reason: unknown;
}
