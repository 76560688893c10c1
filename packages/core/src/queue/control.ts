/**
 * Queue control: remove, retry and promote one job (the transitions
 * protocol/remove-job.ts, retry-job.ts and promote-job.ts); drain, clean,
 * retry and promote many; obliterate the whole queue (BullMQ's names and
 * meanings).
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
 * the rest of the queue and emits nothing.
 */
import { ZkqError } from '../errors.js';
import { NoNodeError, NotEmptyError } from '../zk/errors.js';
import { detachForeignChildren, flowIdsAmong, flowRemoval, mayHoldParents } from './protocol/flow-bulk-removal.js';
import {
  applyMoves,
  delayedPointers,
  type Located,
  type Move,
  pointersIn,
  promotedRecord,
  readyPointers,
  removal,
  toReady,
  waitingStateOf,
} from './protocol/index.js';
import { activeIds, READ_CHUNK, type Read, readJobs } from './protocol/job-reads.js';
import { flowMove, releasing, releasingAgain, removeMove } from './protocol/remove-job.js';
import { type RetryJobOptions, retryMove, waitingEvent } from './protocol/retry-job.js';
import type { JobRecord } from './record.js';
import type { QueueStore, StoredJob } from './store.js';
import type { FinishedStatus, JobType } from './types.js';

export { findPointer } from './protocol/job-reads.js';
export { promoteJob } from './protocol/promote-job.js';
export { claimRanOut, type RemovedJobs, removeJob, removeJobs } from './protocol/remove-job.js';
export { type RetryJobOptions, retryJob } from './protocol/retry-job.js';

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

/** A state `clean` accepts (BullMQ's). */
export type CleanType = Extract<
  JobType,
  'completed' | 'wait' | 'waiting' | 'active' | 'paused' | 'prioritized' | 'delayed' | 'failed'
>;

// ---- many jobs ---------------------------------------------------------------

/**
 * Retries the jobs in `state` (default failed) that finished at or before
 * `timestamp` (default now), `count` (default 1000) at a time, oldest first,
 * resetting their attempt counters unless `opts` keeps them.
 * Resolves with the number retried.
 */
export async function retryJobs(
  store: QueueStore,
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

/** Promotes every delayed job, `count` (default 1000) at a time. Resolves with the number promoted. */
export async function promoteJobs(store: QueueStore, opts: { count?: number } = {}): Promise<number> {
  await store.init();
  let moved = 0;
  for await (const chunk of delayedPointers(store, positive(opts.count, 1000))) {
    const moves: Move[] = [];
    for (const j of await readJobs(store, chunk)) {
      if (j.stored?.record.state !== 'delayed') continue;
      const record = promotedRecord(j.stored.record);
      moves.push(toReady(store, j.stored, record, j.pointer, [waitingEvent(j.id, 'delayed')]));
    }
    moved += (await applyMoves(store, moves)).length;
  }
  return moved;
}

/**
 * Removes every waiting job (prioritized ones included) and, with `delayed`,
 * every delayed job; never an active, completed or failed one (BullMQ's
 * drain), each with the deduplication key that names it. Event `removed`
 * {jobId, prev} per job. Resolves with the number removed.
 */
export async function drain(store: QueueStore, delayed = false): Promise<number> {
  await store.init();
  let removed = 0;
  // delayed first: a job the leader promotes meanwhile is then met in ready/
  const sources = [
    ...(delayed ? [delayedPointers(store, READ_CHUNK)] : []),
    readyPointers(store, () => true, READ_CHUNK),
  ];
  const parents = await mayHoldParents(store);
  for (const source of sources) {
    for await (const chunk of source) {
      const jobs = await readJobs(store, chunk);
      const active = await activeIds(store);
      const idle = jobs.filter((j) => !active.has(j.id));
      // jobs of flows leave their parents as they go (protocol/flow-bulk-removal.ts)
      const flow = await flowIdsAmong(store, idle, parents);
      const moves = idle.map((j) =>
        releasing(store, j.stored && flow.has(j.id) ? flowMove(store, j, j.stored) : removeMove(store, j), j.stored),
      );
      removed += (await applyMoves(store, moves, undefined, releasingAgain(store))).length;
    }
  }
  return removed;
}

/**
 * BullMQ's `clean(grace, limit, type)`: removes up to `limit` (0: no limit)
 * jobs of `type` older than `grace` ms — by finishedOn for completed and
 * failed jobs, by timestamp (creation) for the others — and resolves with
 * their ids. `wait`, `waiting` and `paused` mean the waiting jobs without
 * priority; `active` removes nothing, since a claimed job is never removed.
 * A removed job takes the deduplication key that names it (ttl or not, as
 * BullMQ's clean). Event `cleaned` {count} per transaction.
 */
export async function clean(
  store: QueueStore,
  grace: number,
  limit: number,
  type: CleanType = 'completed',
): Promise<string[]> {
  await store.init();
  const { layout } = store;
  const cutoff = Date.now() - Math.max(0, grace);
  const max = limit > 0 ? limit : Number.POSITIVE_INFINITY;
  const finished = type === 'completed' || type === 'failed';
  let source: AsyncIterable<Located[]>;
  if (finished) {
    source = pointersIn(store, layout.finishedDir(type), READ_CHUNK);
  } else if (type === 'delayed') {
    source = delayedPointers(store, READ_CHUNK);
  } else if (type === 'prioritized') {
    source = readyPointers(store, (lane) => waitingStateOf(lane) === 'prioritized', READ_CHUNK);
  } else if (type === 'wait' || type === 'waiting' || type === 'paused') {
    source = readyPointers(store, (lane) => waitingStateOf(lane) === 'waiting', READ_CHUNK);
  } else {
    return []; // 'active': claimed jobs are never removed
  }
  const removed: string[] = [];
  const parents = await mayHoldParents(store);
  for await (const chunk of source) {
    const jobs = await readJobs(store, chunk);
    const active = finished ? new Set<string>() : await activeIds(store);
    const due = jobs.filter((j): j is Read & { stored: StoredJob } => {
      if (!j.stored || active.has(j.id)) return false;
      const r = j.stored.record;
      const age = finished ? (r.finishedOn ?? r.timestamp) : r.timestamp;
      return age <= cutoff && inCleanState(r, type);
    });
    // jobs of flows leave their parents as they go (protocol/flow-bulk-removal.ts)
    const flow = await flowIdsAmong(store, due, parents);
    const moves = due
      .slice(0, Math.max(0, max - removed.length))
      .map((j) =>
        releasing(
          store,
          flow.has(j.id)
            ? flowRemoval(store, { ...j, stored: j.stored }, [])
            : removal(store, { id: j.id, version: j.version, pointer: j.pointer }, []),
          j.stored,
        ),
      );
    removed.push(...(await applyMoves(store, moves, undefined, releasingAgain(store))));
    if (removed.length >= max) break;
  }
  if (removed.length > 0) await store.publish([{ event: 'cleaned', count: String(removed.length), ts: Date.now() }]);
  return removed;
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

function inCleanState(r: JobRecord, type: CleanType): boolean {
  if (type === 'completed' || type === 'failed' || type === 'delayed') return r.state === type;
  return r.state === 'waiting' || r.state === 'active'; // active in the record, unclaimed: waiting again
}

function positive(n: number | undefined, fallback: number): number {
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}
