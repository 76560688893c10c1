export {
  type BackoffOptions,
  type BaseJobOptions,
  type ConnectionOptions,
  type DeduplicationOptions,
  type DefaultJobOptions,
  Job,
  type JobJson,
  type JobProgress,
  type JobState,
  type JobsOptions,
  type JobType,
  type KeepJobs,
  type QueueBaseOptions,
  type QueueOptions,
  RateLimitError,
  type RateLimiterOptions,
  UnrecoverableError,
} from '@zkq/core';
export { type BulkJob, Queue, type QueueListener } from './queue.js';
export { QueueEvents, type QueueEventsListener, type QueueEventsOptions } from './queue-events.js';
