/** Messages between a Worker and the threads that run a file processor. */
import type { MessagePort } from 'node:worker_threads';
import type { JobJson } from '@zkq/core';

/**
 * A job for a thread: the bytes of its stored record (JSON, as the claim
 * wrote it), or the job itself when there are none.
 */
export type ThreadJob = JobJson | Uint8Array;

/** One job handed to a thread, until its batch is encoded. */
export interface ThreadTask {
  job: ThreadJob;
  token: string;
  /**
   * This run's key, unique in its pool: a job added again under the id of a
   * removed one is claimed at the same token, while the first job's aborted
   * run may still go on in the same thread.
   */
  key: string;
}

/** A task as its thread decodes it: the job is its record, or any object with JobJson's fields. */
export interface DecodedTask {
  job: JobJson;
  token: string;
  key: string;
}

/**
 * Jobs on their way to a thread: the UTF-8 JSON of their tasks in one
 * ArrayBuffer that the message moves (transfers: the sender's copy is
 * detached), so neither thread walks a job's data and options in a
 * structured clone. A job's record bytes go in as they are (copied once):
 * the main thread encodes nothing per job but its key and token.
 */
export interface ThreadJobs {
  /** URL of the processor module. */
  processor: string;
  jobs: ArrayBuffer;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const END_TASK = encoder.encode('}');

/** The bytes of `tasks` for a ThreadJobs message, `[{"key":..,"token":..,"job":<job>},...]`, in a buffer of their own. */
export function encodeTasks(tasks: readonly ThreadTask[]): ArrayBuffer {
  const parts: Uint8Array[] = [];
  let size = 2; // [ and ]
  for (const t of tasks) {
    const comma = parts.length > 0 ? ',' : '';
    const head = encoder.encode(`${comma}{"key":${JSON.stringify(t.key)},"token":${JSON.stringify(t.token)},"job":`);
    const job = t.job instanceof Uint8Array ? t.job : encoder.encode(JSON.stringify(t.job));
    parts.push(head, job, END_TASK);
    size += head.byteLength + job.byteLength + END_TASK.byteLength;
  }
  const out = new Uint8Array(size);
  out[0] = 0x5b; // [
  let at = 1;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  out[at] = 0x5d; // ]
  return out.buffer;
}

/** JobJson's fields (all of them: the type says so), in the order of Job.toJSON(). */
const JOB_FIELDS: Record<keyof JobJson, true> = {
  id: true,
  name: true,
  data: true,
  opts: true,
  progress: true,
  attemptsMade: true,
  attemptsStarted: true,
  stalledCounter: true,
  timestamp: true,
  delay: true,
  priority: true,
  processedOn: true,
  finishedOn: true,
  returnvalue: true,
  failedReason: true,
  stacktrace: true,
  processedBy: true,
};
const FIELDS = Object.keys(JOB_FIELDS) as (keyof JobJson)[];

/** The job of a decoded task, as Job.toJSON() gives it: its record's other fields (state, lane...) left out. */
export function jobJson(from: JobJson): JobJson {
  const job: Partial<Record<keyof JobJson, unknown>> = {};
  for (const f of FIELDS) job[f] = from[f];
  job.stacktrace ??= []; // as the Job built from a record has it
  return job as JobJson;
}

/** The tasks of a ThreadJobs message. */
export function decodeTasks(jobs: ArrayBuffer): DecodedTask[] {
  return JSON.parse(decoder.decode(jobs)) as DecodedTask[];
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
export type LaneIn = ({ kind: 'run' } & ThreadJobs) | ThreadAbort;

/**
 * A lane's thread to the main thread: live progress and each job's result,
 * in the order they happened; last, as the thread crashes or exits, that it
 * goes (the results before are its last; no job is to be handed to it).
 */
export type LaneOut = ThreadProgress | { kind: 'result'; key: string; result: ThreadResult } | { kind: 'exiting' };

/**
 * A thread's answer. Errors travel as data, so their name (UnrecoverableError...)
 * and their code (a ZkqError's) survive; the final progress and the log lines come with it, because a
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
  | { ok: false; name: string; message: string; stack?: string; code?: string; unrecoverable: boolean }
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
