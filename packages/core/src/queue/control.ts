/**
 * Queue control: remove, retry and promote one job or many, drain and clean
 * (the transitions protocol/remove-job.ts, retry-job.ts, promote-job.ts and
 * drain.ts); obliterate the whole queue, here (BullMQ's names and meanings).
 *
 * Every move keeps the job protocol: the record is read
 * (version v) BEFORE the claims are looked at, and the transaction writes or
 * deletes the record *at version v* while it swaps the job's one pointer. A
 * claim taken after the read moves the version on, so the transaction fails
 * and the job is left alone: an active job (one with a claim node) is never
 * touched. A record marked active whose claim is gone belongs to a worker
 * that died mid-attempt; it is waiting to be claimed again and is treated as
 * waiting.
 *
 * Bulk operations write as many moves per transaction as fit (applyMoves);
 * when one job conflicts (it was claimed, promoted or removed meanwhile) it
 * is dropped and the rest is written again.
 *
 * Events (QueueEvents): `removed` {jobId, prev} per job removed by removeJob
 * and drain; `waiting` {jobId, prev} per job retried or promoted; `cleaned`
 * {count} per transaction of clean. obliterate deletes the event log with
 * the rest of the queue and emits nothing; it deletes the queue's tree
 * through the session, not the executor (nothing is left to fence).
 */
import { ZkqError } from '../errors.js';
import { NoNodeError, NotEmptyError } from '../zk/errors.js';
import { detachForeignChildren } from './protocol/flow-bulk-removal.js';
import type { QueueStore } from './store.js';

export { type CleanType, clean, drain } from './protocol/drain.js';
export { findPointer } from './protocol/job-reads.js';
export { promoteJob, promoteJobs } from './protocol/promote-job.js';
export { claimRanOut, type RemovedJobs, removeJob, removeJobs } from './protocol/remove-job.js';
export { type RetryJobOptions, retryJob, retryJobs } from './protocol/retry-job.js';

/** Rounds of deletion before obliterate gives up on a queue whose clients keep writing. */
const OBLITERATE_ROUNDS = 5;

/** The queue still has active jobs (or clients that keep writing to it); nothing more was deleted. */
export class QueueNotEmptyError extends ZkqError {
  constructor(
    readonly queue: string,
    readonly active: number,
    message = `queue '${queue}' has ${active} active job(s): close its workers first, or pass { force: true }`,
  ) {
    super('ZKQ_QUEUE_NOT_EMPTY', message);
  }
}

/** Options of obliterate (BullMQ's ObliterateOpts; `count` is accepted and not needed). */
export interface ObliterateOptions {
  /** Delete the queue even while jobs are active (their workers then fail to record results). */
  force?: boolean;
  count?: number;
}

/**
 * Deletes the whole queue: every job, pointer, setting and event. Pauses it
 * first; without `force`, refuses with QueueNotEmptyError while any job is
 * active (and then restores the pause flag). The claims directory is
 * deleted before anything else, so no worker can claim a job during the
 * deletion. Close the queue's workers first: a live worker writes its
 * membership and election nodes again, and obliterate gives up with
 * QueueNotEmptyError after a few rounds.
 */
export async function obliterate(store: QueueStore, opts: ObliterateOptions = {}): Promise<void> {
  const { session, layout } = store;
  await store.init();
  if (!(await session.exists(layout.root))) return store.forgetDirs();
  // no meta: a half-deleted queue (an earlier obliterate), nothing to pause
  const wasPaused = await store.isPaused().catch((err) => {
    if (err instanceof NoNodeError) return true;
    throw err;
  });
  if (!wasPaused) await store.setPaused(true);
  try {
    await session.delete(layout.claimsDir);
  } catch (err) {
    if (err instanceof NotEmptyError) {
      if (!opts.force) {
        const active = (await store.children(layout.claimsDir)).length;
        if (!wasPaused) await store.setPaused(false);
        throw new QueueNotEmptyError(store.queue, active);
      }
    } else if (!(err instanceof NoNodeError)) throw err;
  }
  // children whose parents live in other queues leave their dependencies first
  await detachForeignChildren(store);
  for (let round = 0; ; round++) {
    try {
      await session.deleteRecursive(layout.root);
    } catch (err) {
      if (!(err instanceof NotEmptyError) || round >= OBLITERATE_ROUNDS) throw err; // a node appeared meanwhile
    }
    if (!(await session.exists(layout.root))) break;
    if (round >= OBLITERATE_ROUNDS) {
      throw new QueueNotEmptyError(
        store.queue,
        0,
        `queue '${store.queue}' keeps being written to while it is deleted: close its workers and listeners first`,
      );
    }
  }
  store.forgetDirs();
}
