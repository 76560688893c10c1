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

/**
 * A thread's answer. Errors travel as data, so their name (UnrecoverableError...)
 * survives; the final progress and the log lines come with it, because the
 * live progress messages travel on another channel and may arrive later.
 */
export type ThreadResult = { progress?: unknown; logs: string[] } & (
  | { ok: true; value: unknown }
  | { ok: false; name: string; message: string; stack?: string; unrecoverable: boolean }
);

/** Live progress from a thread. */
export interface ThreadMessage {
  jobId: string;
  token: string;
  kind: 'progress';
  value: unknown;
}
