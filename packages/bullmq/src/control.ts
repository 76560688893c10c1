/**
 * Queue and job control: pause, drain, clean, obliterate, promote, remove,
 * retry, over zkq's control operations (@zkq/core control.ts), with BullMQ's
 * return values and errors. Edits of one job (delay, priority, data, logs)
 * are in edits.ts.
 *
 * The cursors BullMQ loops on (obliterate, promoteJobs, retryJobs) are 0 at
 * once: zkq's operations walk the whole queue in bounded chunks themselves.
 */
import { type CleanType, JobNotFoundError, JobStateError, QueueNotEmptyError } from '@zkq/core';
import {
  clean,
  drain as drainQueue,
  iterationId,
  obliterate as obliterateQueue,
  promoteJobs as promoteAll,
  promoteJob,
  type RemovedJobs,
  readScheduler,
  removeJobs,
  retryJob,
  retryJobs,
} from '@zkq/core/internal';
import { ErrorCode, type FinishedStatus, type RetryOptions } from 'bullmq';
import type { AnyJob } from './attempts.js';
import type { BackendContext } from './context.js';
import { removeTree } from './flow-removal.js';
import { finishedError } from './json.js';

export { addLog, changeDelay, changePriority, clearLogs, updateData } from './edits.js';

/** The states BullMQ's clean names (`waiting` arrives as `wait`). */
export const CLEAN_TYPES = new Set<string>([
  'completed',
  'failed',
  'delayed',
  'prioritized',
  'wait',
  'waiting',
  'paused',
  'active',
]);

/** Sets or clears the pause flag (workers stop claiming, not running) and logs `paused` or `resumed`. */
export async function pause(ctx: BackendContext, pause: boolean): Promise<void> {
  const store = await ctx.store();
  await store.setPaused(pause);
  await store.publish([{ event: pause ? 'paused' : 'resumed', ts: Date.now() }]);
}

/** Removes every waiting (and prioritized) job, and with `delayed` every delayed one. */
export async function drain(ctx: BackendContext, delayed: boolean): Promise<void> {
  await drainQueue(await ctx.store(), delayed);
}

/**
 * Removes up to `limit` (0: all) jobs in `state` older than `timestamp`: by
 * finishedOn for finished jobs, by creation for the others. `active`
 * removes nothing: a running job holds a claim, and a job whose worker died
 * is waiting again (BullMQ removes active jobs whose lock expired).
 */
export async function cleanJobsByState(
  ctx: BackendContext,
  state: string,
  timestamp: number,
  limit = 0,
): Promise<string[]> {
  if (!CLEAN_TYPES.has(state)) return [];
  const grace = Math.max(0, Date.now() - timestamp);
  return clean(await ctx.store(), grace, limit, state as CleanType);
}

/**
 * Deletes the whole queue. With active jobs and no `force`, BullMQ's error
 * (the queue stays paused, as BullMQ's Queue.obliterate paused it first).
 */
export async function obliterate(ctx: BackendContext, opts: { force: boolean; count: number }): Promise<number> {
  const store = await ctx.store();
  try {
    await obliterateQueue(store, { force: opts.force });
  } catch (err) {
    if (err instanceof QueueNotEmptyError && err.active > 0) {
      throw new QueueNotEmptyError(err.queue, err.active, 'Cannot obliterate queue with active jobs');
    }
    throw err;
  }
  return 0;
}

/**
 * Orphans are job records no state references (BullMQ on Redis could leave
 * them). Every zkq transaction writes or deletes a record together with its
 * one pointer, so none exist; an obliterate cut short leaves a half-deleted
 * queue, which the next obliterate removes. Always 0.
 */
export async function removeOrphanedJobs(_ctx: BackendContext, _count?: number, _limit?: number): Promise<number> {
  return 0;
}

/** Moves a delayed job to waiting now; BullMQ's JobNotInState error when it is not delayed (or missing). */
export async function promote(ctx: BackendContext, jobId: string): Promise<void> {
  try {
    await promoteJob(await ctx.store(), jobId);
  } catch (err) {
    if (err instanceof JobNotFoundError || err instanceof JobStateError) {
      throw finishedError(ErrorCode.JobNotInState, jobId, 'promote', 'delayed');
    }
    throw err;
  }
}

/** Promotes every delayed job, `count` per transaction batch. */
export async function promoteJobs(ctx: BackendContext, count?: number): Promise<number> {
  await promoteAll(await ctx.store(), count === undefined ? {} : { count });
  return 0;
}

/** A remove() waiting for its batch. */
interface RemoveCall {
  jobId: string;
  removeChildren: boolean;
  resolve(removed: number): void;
  reject(err: unknown): void;
}

/** The remove() calls of this turn, per backend: removed together on the next one. */
const removeCalls = new WeakMap<BackendContext, RemoveCall[]>();

/**
 * Removes a job that is not running: 1, or 0 while it is active. A missing
 * job counts as removed (BullMQ's 1). The calls made in one turn of the
 * event loop (`Promise.all(jobs.map((j) => j.remove()))`) are removed
 * together (core's removeJobs); jobs of flows, a scheduler's delayed
 * iterations and active jobs go one by one, with their trees. An active job
 * whose lease ran out (BullMQ's expired lock) is removed with its claim.
 */
export function remove(ctx: BackendContext, jobId: string, removeChildren: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    let calls = removeCalls.get(ctx);
    if (!calls) {
      const batch: RemoveCall[] = [];
      calls = batch;
      removeCalls.set(ctx, batch);
      setImmediate(() => {
        removeCalls.delete(ctx);
        void removeBatch(ctx, batch);
      });
    }
    calls.push({ jobId, removeChildren, resolve, reject });
  });
}

async function removeBatch(ctx: BackendContext, calls: RemoveCall[]): Promise<void> {
  let done: RemovedJobs;
  try {
    const store = await ctx.store();
    const alone = (r: { state: string; opts: unknown }) =>
      r.state === 'delayed' && (r.opts as { repeatJobKey?: string } | undefined)?.repeatJobKey !== undefined;
    done = await removeJobs(
      store,
      calls.map((c) => c.jobId),
      { alone },
    );
  } catch (err) {
    for (const c of calls) c.reject(err);
    return;
  }
  const removed = new Set([...done.removed, ...done.missing]);
  for (const c of calls) {
    if (removed.has(c.jobId)) c.resolve(1);
    else removeOne(ctx, c.jobId, c.removeChildren).then(c.resolve, c.reject);
  }
}

/** Removes one job (with its tree): 1, or 0 while a job of it is active. */
async function removeOne(ctx: BackendContext, jobId: string, removeChildren: boolean): Promise<number> {
  const store = await ctx.store();
  // a scheduler's pending iteration goes with its scheduler (removeJobScheduler), not alone
  const stored = await store.getJob(jobId);
  const schedulerId = (stored?.record.opts as { repeatJobKey?: string } | undefined)?.repeatJobKey;
  if (stored?.record.state === 'delayed' && schedulerId) {
    const scheduler = await readScheduler(store, schedulerId);
    if (scheduler && iterationId(schedulerId, scheduler.record.next) === jobId) {
      throw finishedError(ErrorCode.JobBelongsToJobScheduler, jobId, 'removeJob');
    }
  }
  return (await removeTree(store, jobId, removeChildren)) ? 1 : 0;
}

/**
 * Job.retry(): a completed or failed job back to waiting. Its attempt
 * counters stay unless `opts` resets them (BullMQ's defaults).
 */
export async function retryFinishedJob(
  ctx: BackendContext,
  job: AnyJob,
  state: 'failed' | 'completed',
  opts: RetryOptions = {},
): Promise<void> {
  const id = job.id as string;
  try {
    await retryJob(await ctx.store(), id, {
      state,
      resetAttemptsMade: opts.resetAttemptsMade === true,
      resetAttemptsStarted: opts.resetAttemptsStarted === true,
    });
  } catch (err) {
    if (err instanceof JobNotFoundError) throw finishedError(ErrorCode.JobNotExist, id, 'reprocessJob');
    if (err instanceof JobStateError) throw finishedError(ErrorCode.JobNotInState, id, 'reprocessJob', state);
    throw err;
  }
}

/** Queue.retryJobs(): every job in `state` finished by `timestamp` back to waiting, attempt counters kept. */
export async function retryFinishedJobs(
  ctx: BackendContext,
  state: FinishedStatus = 'failed',
  count?: number,
  timestamp?: number,
): Promise<number> {
  await retryJobs(await ctx.store(), {
    state,
    ...(count === undefined ? {} : { count }),
    ...(timestamp === undefined ? {} : { timestamp }),
    resetAttemptsMade: false,
    resetAttemptsStarted: false,
  });
  return 0;
}
