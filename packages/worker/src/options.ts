/** Worker options (BullMQ's WorkerOptions, zkq's subset plus `threads`, `jobsPerThread` and `barrier`), validated once. */
import {
  InvalidArgumentError,
  type Job,
  type KeepJobs,
  type MetricsOptions,
  type QueueBaseOptions,
  type RateLimiterOptions,
  type Telemetry,
} from '@zkq/core';
import { validateConnection, validateMetricsOptions, validateRateLimit, validateTelemetry } from '@zkq/core/internal';
import type { BackoffStrategy } from './backoff.js';

/** A job processor: resolves with the job's result, throws to fail the attempt (BullMQ's Processor). */
export type Processor<T = any, R = any, N extends string = string> = (
  job: Job<T, R, N>,
  token?: string,
  signal?: AbortSignal,
) => Promise<R>;

export interface AdvancedOptions {
  /** Custom backoff strategies, used for `backoff.type` other than fixed/exponential. */
  backoffStrategy?: BackoffStrategy;
}

/** Batch start: claim nothing until `size` workers have joined the barrier `name`. */
export interface BarrierOptions {
  name: string;
  size: number;
  /** Give up waiting after this many ms (the worker then closes with an error). */
  timeout?: number;
  /** A double barrier: `worker.leaveBarrier()` then resolves once every member has left. */
  double?: boolean;
}

export interface WorkerOptions extends QueueBaseOptions {
  /** Jobs run at once by this worker. Default 1. */
  concurrency?: number;
  /** Start processing in the constructor. Default true; else call `run()`. */
  autorun?: boolean;
  /** Lease of a claimed job, ms: a claim not renewed for this long is stalled. Default 30000. */
  lockDuration?: number;
  /** How often leases are renewed, ms. Default lockDuration / 2. */
  lockRenewTime?: number;
  /** Stalls (lease expiry or worker death mid-job) a job survives before it fails. Default 1. */
  maxStalledCount?: number;
  /** How often the leader checks for stalled jobs, ms. Default 30000. */
  stalledInterval?: number;
  /** Retention of completed jobs when the job says nothing. */
  removeOnComplete?: KeepJobs;
  /** Retention of failed jobs when the job says nothing. */
  removeOnFail?: KeepJobs;
  /** Slowest re-check of an idle queue, seconds (watches wake the worker sooner). Default 5. */
  drainDelay?: number;
  /** Wait after an unexpected error in the claim loop, ms. Default 1000. */
  runRetryDelay?: number;
  settings?: AdvancedOptions;
  /** Accepted for compatibility: file processors always run on worker threads in zkq. */
  useWorkerThreads?: boolean;
  /** Threads for a file processor. Default: the CPU count, at most `concurrency`. */
  threads?: number;
  /**
   * Jobs a thread of a file processor runs at once (piscina's
   * concurrentTasksPerWorker). Default `ceil(concurrency / threads)`, so all of
   * `concurrency` can run at once. With 1, an aborted job (cancel, lost claim)
   * ends its thread; with more, its processor's signal fires instead and the
   * Worker stops waiting for it (a processor that ignores the signal keeps its
   * place on the thread until it ends), and a thread that crashes fails all
   * the jobs it runs (each retried as its attempts allow).
   */
  jobsPerThread?: number;
  /** Worker id (default: host-pid-random). Shown in claims, membership and logs. */
  name?: string;
  /** Batch start barrier. */
  barrier?: BarrierOptions;
  /**
   * Do the queue's housekeeping: promote due delayed jobs and give schedulers
   * left without their next iteration that iteration back (any such worker
   * does, the leader at once, the others as standbys), and take part in the
   * election of its leader (stalled-job recovery). Default true; at least one
   * worker of a queue should.
   */
  housekeeping?: boolean;
  /**
   * Collect BullMQ's per-minute series of completed and failed jobs
   * (`queue.getMetrics`), written at most once per few seconds. Off by default.
   */
  metrics?: MetricsOptions;
  /** BullMQ's Telemetry (e.g. bullmq-otel): a `process` span per attempt, continuing the producer's trace. */
  telemetry?: Telemetry;
  /**
   * At most `max` jobs started per `duration` ms by all workers of the queue
   * together (BullMQ's limiter: the queue's `setGlobalRateLimit` max wins, this
   * duration wins). Enforced in the claim transaction, on ZooKeeper's clock.
   */
  limiter?: RateLimiterOptions;
  /** Longest wait of a rate-limited worker before it looks again, ms. Default 30000. */
  maximumRateLimitDelay?: number;
  /**
   * How long `close()` goes on without an answer from ZooKeeper, ms. Default
   * 5000. While ZooKeeper answers, close() waits for the jobs running to end
   * and their results to be written; once it has answered nothing for this
   * long (stopped, partitioned, a frozen link), close() gives up as
   * `close(true)` would: the jobs still running are aborted, their results
   * dropped, and the session is dropped without waiting. Their claims lapse
   * when ZooKeeper expires the session (one session timeout), and other
   * workers run them again. 0 waits for no answer (as close(true) would).
   */
  closeTimeout?: number;
}

export const DEFAULT_LOCK_DURATION_MS = 30_000;
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;
export const DEFAULT_MAX_STALLED_COUNT = 1;
export const DEFAULT_DRAIN_DELAY_S = 5;
export const DEFAULT_RUN_RETRY_DELAY_MS = 1000;
/** BullMQ's default longest wait of a rate-limited worker, ms. */
export const DEFAULT_MAX_RATE_LIMIT_DELAY_MS = 30_000;
/** Longest close() of a worker that ZooKeeper does not answer, ms. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000;

function positiveInt(v: unknown, name: string): void {
  if (v !== undefined && (!Number.isInteger(v) || (v as number) < 1)) {
    throw new InvalidArgumentError(`${name} must be an integer >= 1`, name);
  }
}

function positive(v: unknown, name: string): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)) {
    throw new InvalidArgumentError(`${name} must be a number > 0`, name);
  }
}

export function validateWorkerOptions(opts: unknown): asserts opts is WorkerOptions {
  if (!opts || typeof opts !== 'object')
    throw new InvalidArgumentError('Worker options with a connection are required', 'opts');
  const o = opts as WorkerOptions;
  validateConnection(o.connection);
  positiveInt(o.concurrency, 'concurrency');
  positiveInt(o.threads, 'threads');
  positiveInt(o.jobsPerThread, 'jobsPerThread');
  positive(o.lockDuration, 'lockDuration');
  positive(o.lockRenewTime, 'lockRenewTime');
  positive(o.stalledInterval, 'stalledInterval');
  positive(o.drainDelay, 'drainDelay');
  positive(o.maximumRateLimitDelay, 'maximumRateLimitDelay');
  if (
    o.closeTimeout !== undefined &&
    (typeof o.closeTimeout !== 'number' || !Number.isFinite(o.closeTimeout) || o.closeTimeout < 0)
  ) {
    throw new InvalidArgumentError('closeTimeout must be a number >= 0', 'closeTimeout');
  }
  if (o.limiter !== undefined) validateRateLimit(o.limiter);
  if (o.maxStalledCount !== undefined && (!Number.isInteger(o.maxStalledCount) || o.maxStalledCount < 0)) {
    throw new InvalidArgumentError('maxStalledCount must be an integer >= 0', 'maxStalledCount');
  }
  if (o.lockRenewTime !== undefined && o.lockRenewTime >= (o.lockDuration ?? DEFAULT_LOCK_DURATION_MS)) {
    throw new InvalidArgumentError('lockRenewTime must be shorter than lockDuration', 'lockRenewTime');
  }
  if (o.name !== undefined && (typeof o.name !== 'string' || !/^[A-Za-z0-9._:-]{1,100}$/.test(o.name))) {
    throw new InvalidArgumentError('name must be 1-100 characters of A-Z a-z 0-9 . _ : -', 'name');
  }
  if (o.metrics !== undefined) validateMetricsOptions(o.metrics);
  if (o.telemetry !== undefined) validateTelemetry(o.telemetry);
  if (o.barrier !== undefined) {
    const b = o.barrier;
    if (!b || typeof b.name !== 'string' || !/^[A-Za-z0-9._-]{1,100}$/.test(b.name)) {
      throw new InvalidArgumentError('barrier.name must be 1-100 characters of A-Z a-z 0-9 . _ -', 'barrier.name');
    }
    positiveInt(b.size, 'barrier.size');
    positive(b.timeout, 'barrier.timeout');
  }
}
