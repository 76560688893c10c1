export { DEFAULT_PREFIX, openSession, validateConnection, validatePrefix } from './connection.js';
export * from './control.js';
export {
  DEDUP_ROUNDS,
  type DedupKey,
  deleteDeduplicationKey,
  getDeduplicationJobId,
  handoffAfterConflict,
  handoffRecord,
  isLive,
  type KeyRead,
  removeDeduplicationKey,
  type Seen,
} from './dedup.js';
export { type AddOutcome, type DedupAction, decide, enqueueJobs } from './dedup-add.js';
export * from './errors.js';
export { EVENT_VALUE_LIMIT, EventSink, eventValue, type QueueEventRecord } from './events.js';
export { type AttemptHooks, type FinishedWaiter, Job, jobState } from './job.js';
export {
  countJobDependencies,
  type DependencyKind,
  isPendingChild,
  type JobDependencies,
  jobKey,
  keyPrefix,
  parentKeys,
  parentKeysIn,
  readJobDependencies,
} from './job-deps.js';
export { buildRecords, type FailurePolicy, type JobToBuild, linkTo } from './job-records.js';
export {
  BUCKET_CAPACITY,
  type ChildKey,
  DELAY_DAY_MS,
  DELAY_WINDOW_MS,
  type DepKind,
  decodeQueueName,
  dueOfDelayed,
  encodeQueueName,
  ID_BLOCK_SIZE,
  idOfDelayed,
  idOfPointer,
  JOB_SHARDS,
  LAYOUT_VERSION,
  LIFO_LANE,
  laneOf,
  MAX_PRIORITY,
  numberOf,
  pad10,
  parseCancelName,
  parseDepEntry,
  QueueLayout,
  shardOf,
  validateCustomJobId,
  validateQueueName,
} from './layout.js';
export { getJobCounts, type JobCounts, listJobIds } from './listing.js';
export { getMetrics, recordMetrics, TRIM_BATCH } from './metrics.js';
export * from './metrics-series.js';
export {
  MAX_DEDUP_ID_LENGTH,
  MAX_DELAY_MS,
  PARENT_POLICIES,
  parentQueueName,
  validateDeduplication,
  validateJobId,
  validateJobName,
  validateJobOptions,
  validateParent,
} from './options.js';
export * from './protocol/index.js';
export { countPerPriority, countStates } from './reads-counts.js';
export { rangeOfState, redisRange } from './reads-pages.js';
export * from './record.js';
export { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, keepPolicy, trimAfterFinish } from './retention.js';
export { CallOrder, type Turn } from './runtime/call-order.js';
export { CancelWatch, type CancelWatchOptions } from './runtime/cancel-watch.js';
export { Finisher } from './runtime/finisher.js';
export { hasDependencies, parentsHeld } from './runtime/given-deps.js';
export { Housekeeper, type HousekeeperEvents } from './runtime/housekeeper.js';
export { IdleLine } from './runtime/idle-line.js';
export { JobSource, type JobSourceOptions } from './runtime/job-source.js';
export { METRICS_FLUSH_MS, MetricsCollector } from './runtime/metrics-collector.js';
export {
  type FinishedKind,
  finishRetained,
  type RetainedFinish,
  type Retention,
  type RetentionOption,
  retentionOf,
} from './runtime/retained-finish.js';
export { ServerClock } from './runtime/server-clock.js';
export { Trimmer } from './runtime/trimmer.js';
export {
  advanceAfterClaim,
  advanceScheduler,
  everyNext,
  healSchedulers,
  type IterationOpts,
  iterationId,
  listSchedulers,
  readScheduler,
  removeScheduler,
  SchedulerCollisionError,
  type SchedulerRecord,
  SchedulerSlotsBusyError,
  type SchedulerSpec,
  type SchedulersHealed,
  upsertScheduler,
} from './schedulers.js';
export * from './sizes.js';
export { type EnqueueEntry, enqueueEvents, type PauseState, QueueStore, type StoredJob } from './store.js';
export * from './telemetry.js';
export type * from './types.js';
