export { DEFAULT_PREFIX, openSession, validateConnection, validatePrefix } from './connection.js';
export * from './control.js';
export * from './errors.js';
export { EVENT_VALUE_LIMIT, EVENTS_KEEP, EventSink, eventValue, type QueueEventRecord } from './events.js';
export { type ScanOptions, scanHead, sortLanes } from './head.js';
export { type AttemptHooks, type FinishedWaiter, Job, jobState } from './job.js';
export {
  BUCKET_CAPACITY,
  DELAY_WINDOW_MS,
  dueOfDelayed,
  ID_BLOCK_SIZE,
  idOfDelayed,
  JOB_SHARDS,
  LIFO_LANE,
  laneOf,
  MAX_PRIORITY,
  pad10,
  QueueLayout,
  shardOf,
  validateCustomJobId,
  validateQueueName,
} from './layout.js';
export { getJobCounts, type JobCounts, listJobIds } from './listing.js';
export { validateJobId, validateJobName, validateJobOptions } from './options.js';
export * from './record.js';
export { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, keepPolicy, trimFinished } from './retention.js';
export { type ClaimInfo, type EnqueueEntry, QueueStore, type StoredJob } from './store.js';
export * from './transitions.js';
export type * from './types.js';
