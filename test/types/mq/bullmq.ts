/** `#mq` as BullMQ: the compatibility app type-checked against BullMQ's own declarations. */
export {
  type BackoffOptions,
  type BaseJobOptions,
  type DefaultJobOptions,
  Job,
  type JobProgress,
  type JobState,
  type JobsOptions,
  type JobType,
  type KeepJobs,
  type Processor,
  Queue,
  type QueueOptions,
  UnrecoverableError,
  Worker,
  type WorkerOptions,
} from 'bullmq';
