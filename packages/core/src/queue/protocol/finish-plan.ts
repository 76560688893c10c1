/**
 * What a finished attempt writes, planned from its outcome alone: the
 * record, the place the job goes to, its events and what its parent learns
 * (pure, but for the clock). finish.ts writes the plan.
 */
import { eventValue, type QueueEventRecord } from '../events.js';
import { MAX_DELAY_MS } from '../options.js';
import type { JobRecord } from '../record.js';
import { cutReason, keptStacktrace } from '../sizes.js';
import type { KeepJobs } from '../types.js';
import type { Place } from './builders.js';
import { type ClaimedJob, PLAIN_LANE } from './claim.js';
import type { Settlement } from './flow-parent.js';

/** Where a finished attempt sends its job. */
export type Outcome =
  | { kind: 'completed'; returnvalue: unknown; remove: boolean }
  | { kind: 'failed'; reason: string; stacktrace: string[]; remove: boolean }
  /** A parent waits for its children (moveToWaitingChildren); it is claimed again once they are done. */
  | { kind: 'waiting-children' }
  | {
      kind: 'retry';
      reason: string;
      stacktrace: string[];
      /** 0: waiting again now; else delayed until this time on ZooKeeper's clock. */
      due: number;
      /** Not a failed attempt (a job the processor moved back itself): attemptsMade stays. */
      skipAttempt?: boolean;
    };

/** One attempt's result, ready to be written. */
export interface Finish {
  job: ClaimedJob;
  outcome: Outcome;
  /** The attempt's log lines: written to the job's log node (logs.ts) before the finish, never to the record. */
  logs?: string[];
  /**
   * The job's log node is known to be there (its lines were written while it
   * ran): a finish that removes the job deletes it right after, rather than
   * leaving it to the leader's sweep.
   */
  logged?: boolean;
  progress?: unknown;
  /**
   * Set on a finish written in place of one too large to store (finishJobs):
   * `lean`, the same outcome without the attempt's logs, progress and stack;
   * `failed`, a final failure with a short reason.
   */
  sizeFallback?: 'lean' | 'failed';
  /**
   * The bounds of the finished set the job goes to (removeOnComplete or
   * removeOnFail): a count is kept inside the finish (trims.ts); an age, or
   * no bound, is left to the caller (the Trimmer).
   */
  keep?: KeepJobs;
}

/** The record, new place and event of a finish (pure, but for the clock). */
export function planFinish(f: Finish): {
  record: JobRecord | undefined;
  to: Place | undefined;
  event: QueueEventRecord;
  /** Events that follow it (BullMQ's `retries-exhausted` after a final failure). */
  also?: QueueEventRecord[];
  /** What the job's parent, if any, learns: set when the job is done for good. */
  settlement?: Settlement;
  /**
   * Back to ready in its place: a job its processor gave back (a rate limit)
   * keeps its ready pointer, so it stays at the head of its lane, as on Redis.
   */
  inPlace?: boolean;
} {
  const { record } = f.job;
  const now = Date.now();
  const id = record.id;
  // the record as it ends this attempt, copied only for an outcome that writes it (not a removal)
  const finished = (): JobRecord => {
    const base: JobRecord = { ...record, finishedOn: now };
    if (f.progress !== undefined) base.progress = f.progress as JobRecord['progress'];
    return base;
  };
  const o = f.outcome;
  const attemptsMade = record.attemptsMade + (o.kind === 'retry' && o.skipAttempt ? 0 : 1);
  if (o.kind === 'completed') {
    const event = { event: 'completed', jobId: id, returnvalue: eventValue(o.returnvalue), prev: 'active', ts: now };
    const settlement: Settlement = { kind: 'processed', value: o.returnvalue };
    if (o.remove) return { record: undefined, to: undefined, event, settlement };
    return {
      record: { ...finished(), state: 'completed', returnvalue: o.returnvalue, attemptsMade },
      to: { kind: 'completed' },
      event,
      settlement,
    };
  }
  if (o.kind === 'failed') {
    const event = { event: 'failed', jobId: id, failedReason: cutReason(o.reason), prev: 'active', ts: now };
    const also =
      attemptsMade >= (record.opts.attempts ?? 1)
        ? [{ event: 'retries-exhausted', jobId: id, attemptsMade, ts: now }]
        : [];
    const settlement: Settlement = { kind: 'failed', reason: cutReason(o.reason) };
    if (o.remove) return { record: undefined, to: undefined, event, also, settlement };
    const failed: JobRecord = { ...finished(), ...failure(record, o), state: 'failed', attemptsMade };
    delete failed.deferredFailure; // spent once the job failed (as BullMQ drops `defa`): a retry runs it
    return {
      record: failed,
      to: { kind: 'failed' },
      event,
      also,
      settlement,
    };
  }
  if (o.kind === 'waiting-children') {
    const parked: JobRecord = { ...record, state: 'waiting-children', hasDeps: true };
    if (f.progress !== undefined) parked.progress = f.progress as JobRecord['progress'];
    return {
      record: parked,
      to: { kind: 'waiting-children' },
      event: { event: 'waiting-children', jobId: id, prev: 'active', ts: now },
    };
  }
  const retried = { ...finished(), ...failure(record, o), attemptsMade, finishedOn: undefined };
  // due 0: again now; any other due (on ZooKeeper's clock) waits in delayed, promoted by the leader on that clock
  if (o.due > 0) {
    const due = Math.min(o.due, now + MAX_DELAY_MS); // a custom backoff past 100 years waits 100 years
    return {
      record: { ...retried, state: 'delayed', due },
      to: { kind: 'delayed', due },
      event: { event: 'delayed', jobId: id, delay: due, ts: now },
    };
  }
  return {
    record: { ...retried, state: 'waiting' },
    to: { kind: 'ready', lane: record.lane ?? PLAIN_LANE },
    event: { event: 'waiting', jobId: id, prev: 'active', ts: now },
    ...(o.skipAttempt ? { inPlace: true } : {}),
  };
}

/** A failed attempt's reason and stack trace history, cut to their sizes (sizes.ts). */
function failure(record: JobRecord, o: { reason: string; stacktrace: string[] }): Partial<JobRecord> {
  return {
    failedReason: cutReason(o.reason),
    stacktrace: keptStacktrace(o.stacktrace, record.stacktrace ?? [], record.opts.stackTraceLimit),
  };
}
