/** `#mq` as zkq: the same compatibility app type-checked against zkq's packages. */
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
  Queue,
  type QueueOptions,
  UnrecoverableError,
} from '@zkq/producer';
export { type Processor, Worker, type WorkerOptions } from '@zkq/worker';
