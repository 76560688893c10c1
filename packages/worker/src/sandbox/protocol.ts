/** Messages between a Worker and the threads that run a file processor. */
import type { JobJson } from '@zkq/core';

/** One job handed to a thread. */
export interface ThreadTask {
  /** URL of the processor module. */
  processor: string;
  job: JobJson;
  token: string;
  /** BroadcastChannel name for progress and logs. */
  channel: string;
}

/** A thread's answer: errors travel as data, so their name (UnrecoverableError...) survives. */
export type ThreadResult =
  | { ok: true; value: unknown }
  | { ok: false; name: string; message: string; stack?: string; unrecoverable: boolean };

/** Progress and log lines from a thread. */
export interface ThreadMessage {
  jobId: string;
  token: string;
  kind: 'progress' | 'log';
  value: unknown;
}
