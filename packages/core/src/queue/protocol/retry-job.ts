/**
 * Retrying a finished job by hand (queue control's retryJob, Job.retry):
 * back to waiting in its lane as a fresh job, at the version read; a child
 * becomes pending again for its parent. Event `waiting` {jobId, prev}.
 */

import { JobNotFoundError, JobStateError } from '../errors.js';
import type { QueueEventRecord } from '../event-record.js';
import type { JobRecord } from '../record.js';
import type { FinishedStatus } from '../types.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { joinBuilt } from './flow-parent.js';
import { rependOps } from './flow-settle.js';
import { findPointer, laneOfRecord, positive, readJobs } from './job-reads.js';
import { applyMoves, type Move, toReady } from './moves.js';
import { pointersIn } from './walks.js';

/** Options of retryJob / Job.retry (BullMQ's RetryOptions; zkq resets both counters unless told not to). */
export interface RetryJobOptions {
  /** Only retry a job in this state (default: completed or failed). */
  state?: FinishedStatus;
  /** Reset attemptsMade to 0 (default true). */
  resetAttemptsMade?: boolean;
  /** Reset attemptsStarted to 0 (default true). */
  resetAttemptsStarted?: boolean;
}

/**
 * Moves a completed or failed job back to waiting, as a fresh job: attempt
 * counters, stall count, failure reason, return value and timestamps are
 * reset (the stack trace is kept). Throws JobNotFoundError, or JobStateError
 * when the job is not finished (or not in `opts.state`).
 * Event `waiting` {jobId, prev}.
 */
export async function retryJob(store: ProtocolContext, id: string, opts: RetryJobOptions = {}): Promise<void> {
  await store.init();
  await store.executor.runPlanned(
    async () => {
      const stored = await store.getJob(id);
      if (!stored) throw new JobNotFoundError(id);
      const prev = stored.record.state;
      if ((prev !== 'completed' && prev !== 'failed') || (opts.state && prev !== opts.state)) {
        throw new JobStateError(id, `is ${prev}, not ${opts.state ?? 'completed or failed'}: cannot retry it`);
      }
      const pointer = await findPointer(store, stored.record);
      return { answer: undefined, unit: retryMove(store, stored, pointer, opts, [waitingEvent(id, prev)]) };
    },
    // read back by its receipt: planned again after a lost reply, it found its job waiting and threw JobStateError
    { receipt: true },
  );
}

export function retryMove(
  store: ProtocolContext,
  stored: StoredJob,
  pointer: string | undefined,
  opts: RetryJobOptions,
  events: QueueEventRecord[],
): Move {
  const r = stored.record;
  const record: JobRecord = {
    ...r,
    state: 'waiting',
    lane: laneOfRecord(r),
    attemptsMade: opts.resetAttemptsMade === false ? r.attemptsMade : 0,
    attemptsStarted: opts.resetAttemptsStarted === false ? r.attemptsStarted : 0,
    stalledCounter: 0,
    failedReason: undefined,
    deferredFailure: undefined, // spent by the failure this retry undoes
    returnvalue: undefined,
    finishedOn: undefined,
    processedOn: undefined,
    processedBy: undefined,
    due: undefined,
  };
  const move = toReady(store, stored, record, pointer, events);
  if (!r.parentLink) return move;
  // a child becomes pending again for its parent, read anew whenever the unit is built
  return { id: move.id, build: async () => joinBuilt(await move.build(), { ops: await rependOps(store, r) }) };
}

export function waitingEvent(jobId: string, prev: string): QueueEventRecord {
  return { event: 'waiting', jobId, prev, ts: Date.now() };
}

/**
 * Retries the jobs in `state` (default failed) that finished at or before
 * `timestamp` (default now), `count` (default 1000) at a time, oldest first,
 * resetting their attempt counters unless `opts` keeps them.
 * Resolves with the number retried.
 */
export async function retryJobs(
  store: ProtocolContext,
  opts: { state?: FinishedStatus; count?: number; timestamp?: number } & Omit<RetryJobOptions, 'state'> = {},
): Promise<number> {
  await store.init();
  const state = opts.state ?? 'failed';
  const timestamp = opts.timestamp ?? Date.now();
  let moved = 0;
  for await (const chunk of pointersIn(store, store.layout.finishedDir(state), positive(opts.count, 1000))) {
    const moves: Move[] = [];
    for (const j of await readJobs(store, chunk)) {
      if (!j.stored || j.stored.record.state !== state) continue;
      if ((j.stored.record.finishedOn ?? 0) > timestamp) continue;
      moves.push(retryMove(store, j.stored, j.pointer, opts, [waitingEvent(j.id, state)]));
    }
    moved += (await applyMoves(store, moves)).length;
  }
  return moved;
}
