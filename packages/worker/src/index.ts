export {
  FailedChildrenError,
  Job,
  type JobProgress,
  LostJobError,
  type Metrics,
  type MetricsOptions,
  MetricsTime,
  RATE_LIMIT_ERROR,
  RateLimitError,
  type RateLimiterOptions,
  type Telemetry,
  UnrecoverableError,
  WaitingChildrenError,
} from '@zkq/core';
export { type BackoffStrategy, backoffDelay } from './backoff.js';
export {
  type AdvancedOptions,
  type BarrierOptions,
  DEFAULT_DRAIN_DELAY_S,
  DEFAULT_LOCK_DURATION_MS,
  DEFAULT_MAX_STALLED_COUNT,
  DEFAULT_STALLED_INTERVAL_MS,
  type Processor,
  type WorkerOptions,
} from './options.js';
export { ProcessorThreadError } from './sandbox/pool.js';
export { Worker, type WorkerListener } from './worker.js';
