/**
 * Cancelling a job from any process, for BullMQ's classes on the backend.
 *
 * BullMQ's own `worker.cancelJob(id, reason)` fires the processor's
 * AbortSignal in that Worker only: the caller must hold the Worker that runs
 * the job. On Redis nothing carries a cancel to another process, and
 * BullMQ's backend seam gives a backend no handle to its Worker, so the
 * backend cannot fire the signal itself. Two functions close the gap, on
 * zkq's cancel requests (protocol/cancels.ts in @zkq/core):
 *
 * - `cancelJob(queue, jobId, reason?)` files a request for the running
 *   attempt, from any process (a Queue, a Worker, anything on the backend).
 * - `relayCancellation(worker)`, called once per Worker, follows the
 *   requests filed for that Worker's jobs and hands each to
 *   `worker.cancelJob(id, reason)`: BullMQ's own cancellation from there on.
 *
 * zkq's Queue (`queue.cancelJob`) and the `zkq cancel` command file the same
 * requests, and zkq's Worker acts on them by itself: a job runs wherever it
 * runs, and any front-end can cancel it.
 */
import { InvalidArgumentError } from '@zkq/core';
import { CancelWatch, requestCancel, validateCancelReason, validateJobId } from '@zkq/core/internal';
import type { Worker } from 'bullmq';
import { ZooKeeperQueueBackend } from './backend.js';

/** First and longest wait before telling the Worker again about a job it has not started tracking yet, ms. */
const RETRY_MIN_MS = 10;
const RETRY_MAX_MS = 1000;

/** A relay started by `relayCancellation`; it stops by itself when its Worker closes. */
export interface CancellationRelay {
  close(): void;
}

/** The ZooKeeper backend under a BullMQ Queue or Worker, or InvalidArgumentError. */
function backendOf(owner: { readonly backend?: unknown }, caller: string): ZooKeeperQueueBackend {
  const backend = owner?.backend;
  if (!(backend instanceof ZooKeeperQueueBackend)) {
    throw new InvalidArgumentError(
      `${caller} needs a BullMQ class on the ZooKeeper backend (withBackend(createZooKeeperBackend))`,
      'queue',
    );
  }
  return backend;
}

/**
 * Cancels a running job of `queue`'s queue, in whichever process runs it
 * (a BullMQ Worker with `relayCancellation`, or zkq's Worker). Resolves
 * true when the request reached the running attempt, false when the job is
 * not active (nothing is changed then).
 */
export async function cancelJob(
  queue: { readonly backend?: unknown },
  jobId: string,
  reason?: string,
): Promise<boolean> {
  const backend = backendOf(queue, 'cancelJob');
  validateJobId(jobId);
  validateCancelReason(reason);
  return requestCancel(await backend.ctx.store(), jobId, reason);
}

/**
 * Delivers the cancel requests filed for `worker`'s jobs to
 * `worker.cancelJob(id, reason)`. The processor must take BullMQ's signal
 * (its third parameter, as for BullMQ's own cancelJob): the job then ends as
 * its error says. The relay holds one watch while the Worker runs jobs and
 * none while it is idle, and stops when the Worker closes.
 */
export function relayCancellation(worker: Worker<any, any, any, any, any, any>): CancellationRelay {
  const { ctx } = backendOf(worker, 'relayCancellation');
  const timers = new Set<NodeJS.Timeout>();
  let watch: CancelWatch | undefined;
  let closed = false;
  const tokenOf = (id: string) => ctx.held.get(id)?.job.token;

  // BullMQ starts tracking a job (and makes its AbortController) just after it reports it
  // active: a request seen in between is told again shortly, while that attempt runs.
  const deliver = (id: string, token: number, reason: string | undefined, wait = 0): void => {
    if (closed || tokenOf(id) !== token || worker.cancelJob(id, reason)) return;
    const next = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, wait * 2));
    const timer = setTimeout(() => {
      timers.delete(timer);
      deliver(id, token, reason, next);
    }, next);
    timer.unref();
    timers.add(timer);
  };

  const watching = ctx.store().then((store) => {
    if (closed) return undefined;
    watch = new CancelWatch(store, {
      owner: ctx.claimOwner,
      holding: () => ctx.held.size > 0,
      tokenOf,
      cancel: (r) => deliver(r.id, r.token, r.reason),
      onError: ctx.onError,
    });
    for (const [id, held] of ctx.held) watch.claimed(id, held.job.token);
    return watch;
  });
  watching.catch(ctx.onError);

  const onActive = (job: { id?: string | undefined }) => {
    const token = job.id === undefined ? undefined : tokenOf(job.id);
    if (token !== undefined) void watching.then((w) => w?.claimed(job.id as string, token), ctx.onError);
  };
  const close = (): void => {
    if (closed) return;
    closed = true;
    worker.off('active', onActive);
    worker.off('closed', close);
    for (const t of timers) clearTimeout(t);
    timers.clear();
    watch?.close();
  };
  worker.on('active', onActive);
  worker.on('closed', close);
  return { close };
}
