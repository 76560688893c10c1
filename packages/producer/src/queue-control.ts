/**
 * A Queue's control: pause and resume, the global concurrency and rate
 * limits, removing, cancelling, draining, cleaning, obliterating, retrying
 * and promoting jobs (docs/queue-control.md), and deduplication keys.
 */
import {
  type CleanType,
  type FinishedStatus,
  InvalidArgumentError,
  JobStateError,
  type ObliterateOptions,
  type RateLimiterOptions,
  SpanKind,
} from '@zkq/core';
import {
  clean,
  deleteDeduplicationKey,
  drain,
  getDeduplicationJobId,
  getGlobalConcurrency,
  getGlobalRateLimit,
  getRateLimitTtl,
  isMaxed,
  obliterate,
  promoteJobs,
  removeJob,
  removeRateLimit,
  removeSettings,
  requestCancel,
  retryJobs,
  setGlobalConcurrency,
  setGlobalRateLimit,
  setRateLimit,
  TelemetryAttributes,
  validateCancelReason,
  validateDeduplication,
  validateJobId,
  validateLimit,
  validateWindowMs,
} from '@zkq/core/internal';
import { QueueGetters } from './queue-getters.js';

const CLEAN_TYPES = new Set<string>([
  'completed',
  'wait',
  'waiting',
  'active',
  'paused',
  'prioritized',
  'delayed',
  'failed',
]);

export class QueueControl<DataType = any, ResultType = any, NameType extends string = string> extends QueueGetters<
  DataType,
  ResultType,
  NameType
> {
  /** Stops every worker of this queue from claiming new jobs (in-flight jobs finish). */
  async pause(): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'pause', async () => {
      const store = await this.store();
      await store.setPaused(true);
      await store.publish([{ event: 'paused', ts: Date.now() }]);
      this.emit('paused');
    });
  }

  /** Lets workers claim again. */
  async resume(): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'resume', async () => {
      const store = await this.store();
      await store.setPaused(false);
      await store.publish([{ event: 'resumed', ts: Date.now() }]);
      this.emit('resumed');
    });
  }

  // ---- global limits (every worker of the queue, every process) --------------------

  /**
   * At most `concurrency` jobs of this queue run at once, whatever the
   * workers (an integer >= 1). Resolves 1 when none was set (BullMQ's answer).
   */
  async setGlobalConcurrency(concurrency: number): Promise<number> {
    validateLimit(concurrency, 'concurrency');
    return setGlobalConcurrency(await this.store(), concurrency);
  }

  async getGlobalConcurrency(): Promise<number | null> {
    return getGlobalConcurrency(await this.store());
  }

  /** Resolves 1 when a global concurrency was removed. */
  async removeGlobalConcurrency(): Promise<number> {
    return removeSettings(await this.store(), ['concurrency']);
  }

  /** At most `max` jobs started per `duration` ms by all workers together (integers >= 1). */
  async setGlobalRateLimit(max: number, duration: number): Promise<number> {
    validateLimit(max, 'max');
    validateLimit(duration, 'duration');
    return setGlobalRateLimit(await this.store(), max, duration);
  }

  async getGlobalRateLimit(): Promise<RateLimiterOptions | null> {
    return getGlobalRateLimit(await this.store());
  }

  /** Resolves with how many of `max` and `duration` were removed. */
  async removeGlobalRateLimit(): Promise<number> {
    return removeSettings(await this.store(), ['max', 'duration']);
  }

  /** No worker of the queue starts a job for the next `ms` (0 or less ends such a window). */
  async rateLimit(ms: number): Promise<void> {
    validateWindowMs(ms);
    await setRateLimit(await this.store(), ms);
  }

  /** BullMQ's getRateLimitTtl: ms left of the rate-limit window (-2 without one; 0 when `maxJobs` is not reached). */
  async getRateLimitTtl(maxJobs?: number): Promise<number> {
    return getRateLimitTtl(await this.store(), maxJobs);
  }

  /** Ends the rate-limit window; resolves 1 when one was live. */
  async removeRateLimitKey(): Promise<number> {
    return removeRateLimit(await this.store());
  }

  /** Whether the active jobs reach the global concurrency. */
  async isMaxed(): Promise<boolean> {
    return isMaxed(await this.store());
  }

  // ---- queue control (docs/queue-control.md) ---------------------------------

  /**
   * Removes a job that is not active, wherever it is. Resolves 1 when the job
   * is gone (removed now, or not there), 0 when it is active and was left
   * alone (BullMQ's codes). A child leaves its parent's dependencies (the
   * last pending one releases the parent). `removeChildren` has no effect:
   * a removed parent's children stay and finish on their own.
   */
  async remove(jobId: string, _opts?: { removeChildren?: boolean }): Promise<number> {
    return this.trace(SpanKind.INTERNAL, 'remove', async (span) => {
      validateJobId(jobId);
      span?.setAttributes({ [TelemetryAttributes.JobId]: jobId });
      try {
        if (await removeJob(await this.store(), jobId)) this.emit('removed', jobId);
        return 1;
      } catch (err) {
        if (err instanceof JobStateError) return 0;
        throw err;
      }
    });
  }

  /**
   * Cancels a running job, in whichever process runs it: that worker's
   * processor sees its AbortSignal fire with `reason`, and the job then ends
   * as the processor's error says (failed, or retried). Resolves true when
   * the request reached the running attempt, false when the job is not
   * active (nothing is changed then). A processor that ignores its signal
   * is not stopped.
   */
  async cancelJob(jobId: string, reason?: string): Promise<boolean> {
    return this.trace(SpanKind.INTERNAL, 'cancelJob', async (span) => {
      validateJobId(jobId);
      validateCancelReason(reason);
      span?.setAttributes({ [TelemetryAttributes.JobId]: jobId });
      return requestCancel(await this.store(), jobId, reason);
    });
  }

  /** Removes every waiting (and prioritized) job and, with `delayed`, every delayed job; active jobs stay. */
  async drain(delayed = false): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'drain', async () => {
      await drain(await this.store(), delayed === true);
    });
  }

  /**
   * Removes up to `limit` jobs (0: all) of `type` older than `grace` ms —
   * finished before it for completed/failed, added before it otherwise — and
   * resolves with their ids. Active jobs are never removed. Emits `cleaned`.
   */
  async clean(grace: number, limit: number, type: CleanType = 'completed'): Promise<string[]> {
    return this.trace(SpanKind.INTERNAL, 'clean', async (span) => {
      if (typeof grace !== 'number' || !(grace >= 0))
        throw new InvalidArgumentError('grace must be a number >= 0', 'grace');
      if (typeof limit !== 'number' || !(limit >= 0))
        throw new InvalidArgumentError('limit must be a number >= 0', 'limit');
      if (!CLEAN_TYPES.has(type)) throw new InvalidArgumentError(`cannot clean jobs of type '${String(type)}'`, 'type');
      span?.setAttributes({
        [TelemetryAttributes.QueueGrace]: grace,
        [TelemetryAttributes.JobType]: type,
        [TelemetryAttributes.QueueCleanLimit]: limit,
      });
      const ids = await clean(await this.store(), grace, limit, type);
      this.emit('cleaned', ids, type === 'waiting' ? 'wait' : type);
      return ids;
    });
  }

  /**
   * Deletes the queue and everything in it, irreversibly. Refuses with
   * QueueNotEmptyError while jobs are active, unless `force`. Close the
   * queue's workers and QueueEvents first; use a new Queue object afterwards.
   */
  async obliterate(opts?: ObliterateOptions): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'obliterate', async () => {
      await obliterate(await this.store(), opts ?? {});
    });
  }

  /** Moves failed (or, with `state: 'completed'`, completed) jobs finished by `timestamp` back to waiting. */
  async retryJobs(opts: { count?: number; state?: FinishedStatus; timestamp?: number } = {}): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'retryJobs', async () => {
      if (opts.state !== undefined && opts.state !== 'failed' && opts.state !== 'completed')
        throw new InvalidArgumentError("state must be 'failed' or 'completed'", 'opts.state');
      await retryJobs(await this.store(), opts);
    });
  }

  /** Moves every delayed job to waiting now. */
  async promoteJobs(opts: { count?: number } = {}): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'promoteJobs', async () => {
      await promoteJobs(await this.store(), opts);
    });
  }

  // ---- deduplication (BullMQ's) -------------------------------------------------

  /** The id of the job that deduplication id `id` keeps, or null when its key is missing or stale. */
  async getDeduplicationJobId(id: string): Promise<string | null> {
    validateDeduplication({ id }, 'deduplication');
    return getDeduplicationJobId(await this.store(), id);
  }

  /** Deletes the key of deduplication id `id`, so the next add with it adds a job; resolves 1 if a live key was deleted, else 0. */
  async removeDeduplicationKey(id: string): Promise<number> {
    return this.trace(SpanKind.INTERNAL, 'removeDeduplicationKey', async (span) => {
      validateDeduplication({ id }, 'deduplication');
      span?.setAttributes({ [TelemetryAttributes.DeduplicationKey]: id });
      return deleteDeduplicationKey(await this.store(), id);
    });
  }
}
