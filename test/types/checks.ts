/**
 * zkq's public types side by side with BullMQ's: every option BullMQ users
 * set is either accepted by zkq with a compatible type or listed below as a
 * known gap (docs/bullmq-compat.md explains each), the job state unions
 * agree, and the listener maps have the same events with the same
 * arguments. A BullMQ upgrade that adds an option, or a zkq change that
 * narrows one, fails here until the lists and the docs are updated.
 */

import type * as Zkq from '@zkq/producer';
import type * as ZkqWorker from '@zkq/worker';
import type * as Bull from 'bullmq';
import type { EmailData, EmailJobName, EmailResult } from './app.js';
import { type Assignable, type Equal, type Expect, expectAssignable } from './expect.js';

/** Compiles only when every member of `T` is `never`; the error names the offending keys otherwise. */
type ExpectNone<T extends Record<string, never>> = T;

/** Keys present in both `Z` and `B` whose BullMQ value type zkq does not accept. */
type Rejected<Z, B, Skip extends PropertyKey = never> = {
  [K in Exclude<keyof Z & keyof B, Skip>]-?: [B[K]] extends [Z[K]] ? never : K;
}[Exclude<keyof Z & keyof B, Skip>];

/**
 * How the option shape `Z` falls short of BullMQ's `B`: options missing that
 * are not listed in `Gaps`, listed gaps that zkq has after all, zkq options
 * BullMQ lacks that are not listed in `Extras`, and shared options whose
 * BullMQ values zkq refuses (`Skip` leaves some out of that comparison).
 */
type OptionsProblems<Z, B, Gaps extends keyof B, Extras extends keyof Z = never, Skip extends PropertyKey = never> = {
  missing: Exclude<keyof B, keyof Z | Gaps>;
  listedAsGapButPresent: Extract<Gaps, keyof Z>;
  unlistedExtras: Exclude<keyof Z, keyof B | Extras>;
  rejected: Rejected<Z, B, Skip>;
};

// ---------------------------------------------------------------------------
// Job options

/** BullMQ job options zkq does not implement (repeat internals). */
export type JobsOptionsGaps = 'prevMillis';

export type DefaultJobOptionsCheck = ExpectNone<OptionsProblems<Zkq.DefaultJobOptions, Bull.DefaultJobOptions, never>>;
export type BaseJobOptionsCheck = ExpectNone<OptionsProblems<Zkq.BaseJobOptions, Bull.BaseJobOptions, 'prevMillis'>>;
export type JobsOptionsCheck = ExpectNone<OptionsProblems<Zkq.JobsOptions, Bull.JobsOptions, JobsOptionsGaps>>;
export type BackoffOptionsCheck = [
  ExpectNone<OptionsProblems<Zkq.BackoffOptions, Bull.BackoffOptions, never>>,
  Expect<Equal<Zkq.BackoffOptions['type'], Bull.BackoffOptions['type']>>,
];
// BullMQ's KeepJobs is a union ({ count } | { age, count?, limit? }); zkq's one interface takes both.
export type KeepJobsCheck = [
  Expect<Assignable<Bull.KeepJobs, Zkq.KeepJobs>>,
  Expect<Assignable<{ count: number }, Zkq.KeepJobs>>,
  Expect<Assignable<{ age: number; count?: number; limit?: number }, Zkq.KeepJobs>>,
];

declare const bullJobsOptions: Bull.JobsOptions;
declare const bullDefaultJobOptions: Bull.DefaultJobOptions;
declare const bullBaseJobOptions: Bull.BaseJobOptions;
declare const bullBackoff: Bull.BackoffOptions;
declare const bullKeepJobs: Bull.KeepJobs;
export const jobsOptions: Zkq.JobsOptions = bullJobsOptions;
export const defaultJobOptions: Zkq.DefaultJobOptions = bullDefaultJobOptions;
export const baseJobOptions: Zkq.BaseJobOptions = bullBaseJobOptions;
export const backoff: Zkq.BackoffOptions = bullBackoff;
export const keepJobs: Zkq.KeepJobs = bullKeepJobs;

// ---------------------------------------------------------------------------
// Queue and worker options. `connection` differs by design (ZooKeeper, not Redis).

/**
 * BullMQ queue options zkq does not implement. `telemetry` is in zkq's
 * QueueOptions and WorkerOptions rather than in their base (QueueEvents takes
 * none, as in BullMQ).
 */
export type QueueBaseOptionsGaps = 'telemetry' | 'skipWaitingForReady';
export type QueueOptionsGaps = 'skipWaitingForReady' | 'streams' | 'skipMetasUpdate' | 'settings';
/** BullMQ worker options zkq does not implement. */
export type WorkerOptionsGaps =
  | 'skipWaitingForReady'
  | 'maxStartedAttempts'
  | 'skipStalledCheck'
  | 'skipLockRenewal'
  | 'workerForkOptions'
  | 'workerThreadsOptions';
/** zkq-only worker options. */
export type WorkerOptionsExtras = 'threads' | 'jobsPerThread' | 'barrier' | 'housekeeping' | 'closeTimeout';
/** BullMQ's repeat settings (repeatable jobs are not implemented). */
export type AdvancedOptionsGaps = 'repeatStrategy' | 'repeatKeyHashAlgorithm';

// BullMQ keeps `prefix` in KeyPrefixOptions, next to QueueBaseOptions; zkq keeps it in QueueBaseOptions.
export type QueueBaseOptionsCheck = ExpectNone<
  OptionsProblems<Zkq.QueueBaseOptions, Bull.QueueBaseOptions, QueueBaseOptionsGaps, 'prefix', 'connection'>
>;
export type QueueOptionsCheck = ExpectNone<
  OptionsProblems<Zkq.QueueOptions, Bull.QueueOptions, QueueOptionsGaps, never, 'connection'>
>;
// `settings` is compared below, member by member.
export type WorkerOptionsCheck = ExpectNone<
  OptionsProblems<
    ZkqWorker.WorkerOptions,
    Bull.WorkerOptions,
    WorkerOptionsGaps,
    WorkerOptionsExtras,
    'connection' | 'settings'
  >
>;
export type AdvancedOptionsCheck = ExpectNone<
  OptionsProblems<ZkqWorker.AdvancedOptions, Bull.AdvancedOptions, AdvancedOptionsGaps, never, 'backoffStrategy'>
>;
// A backoff strategy gets the same arguments; its `job` is zkq's Job (BullMQ passes its MinimalJob).
type StrategyArgs<S> = S extends (...args: infer A) => infer R ? [A['length'], A[0], A[1], A[2], R] : never;
export type BackoffStrategyCheck = Expect<
  Equal<StrategyArgs<ZkqWorker.BackoffStrategy>, StrategyArgs<NonNullable<Bull.AdvancedOptions['backoffStrategy']>>>
>;

// ---------------------------------------------------------------------------
// States, progress, processors

export type JobStateCheck = Expect<Equal<Zkq.JobState, Bull.JobState>>;
export type FinishedStatusCheck = Expect<Equal<Extract<Zkq.JobState, 'completed' | 'failed'>, Bull.FinishedStatus>>;
// zkq's JobType also has 'paused' (BullMQ v5's; a paused queue's waiting jobs).
export type JobTypeCheck = [
  Expect<Assignable<Bull.JobType, Zkq.JobType>>,
  Expect<Equal<Exclude<Zkq.JobType, Bull.JobType>, 'paused'>>,
];
export type JobProgressCheck = Expect<Equal<Zkq.JobProgress, Bull.JobProgress>>;

/** BullMQ's Job with zkq's Job in its place (same data, result and name types). */
type AsZkq<T> = T extends Bull.Job<infer D, infer R, infer N, any> ? Zkq.Job<D, R, N> : T;
type ArgsAsZkq<A extends unknown[]> = { [I in keyof A]: AsZkq<A[I]> };

type ProcessorArgs<P> = P extends (...args: infer A) => infer R ? [ArgsAsZkq<A>, R] : never;
export type ProcessorCheck = Expect<
  Equal<
    ProcessorArgs<ZkqWorker.Processor<EmailData, EmailResult, EmailJobName>>,
    ProcessorArgs<Bull.Processor<EmailData, EmailResult, EmailJobName>>
  >
>;

// ---------------------------------------------------------------------------
// Listener maps: BullMQ's are `{ event: (...args) => void }`, zkq's (node's typed
// EventEmitter) `{ event: [...args] }`. Same events, same arguments.

/** Events present in both maps whose arguments differ. */
type ListenerMismatch<B, Z> = {
  [K in keyof B & keyof Z]: B[K] extends (...args: infer A) => void
    ? Equal<ArgsAsZkq<A>, Z[K]> extends true
      ? never
      : K
    : K;
}[keyof B & keyof Z];

type ListenerProblems<B, Z, Gaps extends keyof B, Extras extends keyof Z = never> = {
  missing: Exclude<keyof B, keyof Z | Gaps>;
  listedAsGapButPresent: Extract<Gaps, keyof Z>;
  unlistedExtras: Exclude<keyof Z, keyof B | Extras>;
  argumentsDiffer: ListenerMismatch<B, Z>;
};

type BullWorkerListener = Bull.WorkerListener<EmailData, EmailResult, EmailJobName>;
type ZkqWorkerListener = ZkqWorker.WorkerListener<EmailData, EmailResult, EmailJobName>;
/** BullMQ worker events zkq does not emit; zkq adds `lost` (a claim revoked mid-job). */
export type WorkerListenerGaps = 'ioredis:close' | 'lockRenewalFailed' | 'locksRenewed';
export type WorkerListenerCheck = ExpectNone<
  ListenerProblems<BullWorkerListener, ZkqWorkerListener, WorkerListenerGaps, 'lost' | 'barrierPassed'>
>;

type BullQueueListener = Bull.QueueListener<Bull.Job<EmailData, EmailResult, EmailJobName>>;
type ZkqQueueListener = Zkq.QueueListener<Zkq.Job<EmailData, EmailResult, EmailJobName>>;
/** BullMQ queue events zkq does not emit; zkq adds `duplicated` (an added custom jobId existed). */
export type QueueListenerGaps = 'ioredis:close' | 'progress';
export type QueueListenerCheck = ExpectNone<
  ListenerProblems<BullQueueListener, ZkqQueueListener, QueueListenerGaps, 'duplicated'>
>;

// ---------------------------------------------------------------------------
// QueueEvents: `job.waitUntilFinished(queueEvents)` must take @zkq/producer's QueueEvents.

type ZkqQueueEvents = typeof Zkq extends { QueueEvents: abstract new (...args: any[]) => infer I } ? I : never;
declare const job: Zkq.Job<EmailData, EmailResult, EmailJobName>;
export function waitUntilFinished(queueEvents: ZkqQueueEvents): Promise<EmailResult> {
  return job.waitUntilFinished(queueEvents);
}

expectAssignable<Zkq.JobsOptions>({ attempts: 3, backoff: { type: 'exponential', delay: 1000 }, jobId: 'a' });
// A flow written for BullMQ's FlowProducer (without deduplication) is one for zkq's.
expectAssignable<Zkq.FlowJob>({
  name: 'render',
  queueName: 'renders',
  data: { movie: 1 },
  opts: { parent: { id: '7', queue: 'bull:scenes' }, attempts: 2 },
  children: [{ name: 'frame', queueName: 'frames', opts: { failParentOnFailure: true }, children: [] }],
});

// ---------------------------------------------------------------------------
// Class members. BullMQ members zkq lacks must be listed (and documented);
// zkq may add members freely, and a listed gap may be implemented later.

/** Job: editing children, deduplication, repeat keys, and moving jobs by hand. */
export type JobMemberGaps =
  | 'repeatJobKey'
  | 'deduplicationId'
  | 'deferredFailure'
  | 'asJSON'
  | 'asJSONSandbox'
  | 'updateData'
  | 'clearLogs'
  | 'changeDelay'
  | 'changePriority'
  | 'extendLock'
  | 'moveToCompleted'
  | 'moveToFailed'
  | 'moveToWait'
  | 'moveToDelayed'
  | 'removeChildDependency'
  | 'removeUnprocessedChildren'
  | 'addJob'
  | 'toFlowEntry'
  | 'removeDeduplicationKey';

/** Queue: schedulers, metrics, per-state counters. */
export type QueueMemberGaps =
  // Redis and backend internals (zkq's `client` is there, and resolves with the ZooKeeper session)
  | 'keys'
  | 'token'
  | 'toKey'
  | 'backend'
  | 'getBackend'
  | 'disconnect'
  | 'trace'
  | 'closing'
  | 'jobsOpts'
  | 'defaultJobOptions'
  | 'metaValues'
  | 'getMeta'
  | 'getVersion'
  | 'trimEvents'
  | 'removeDeprecatedPriorityKey'
  | 'removeOrphanedJobs'
  // job schedulers (repeatable jobs)
  | 'jobScheduler'
  | 'upsertJobScheduler'
  | 'getJobScheduler'
  | 'getJobSchedulers'
  | 'getJobSchedulersCount'
  | 'removeJobScheduler'
  // deduplication: the deprecated debounce names
  | 'removeDebounceKey'
  | 'getDebounceJobId'
  // managing jobs in bulk
  | 'updateJobProgress'
  | 'addJobLog'
  | 'getJobLogs'
  // flows: a parent's children are read from its Job
  | 'getDependencies'
  // counters and listings (use getJobCounts / getJobCountByTypes / getJobs)
  | 'getWaitingCount'
  | 'getActiveCount'
  | 'getDelayedCount'
  | 'getCompletedCount'
  | 'getFailedCount'
  | 'getPrioritizedCount'
  | 'getCountsPerPriority'
  | 'getPrioritized'
  | 'getRanges'
  // workers, events and metrics
  | 'getWorkers'
  | 'getWorkersCount'
  | 'getQueueEvents'
  | 'recordJobCountsMetric';

/** Worker: manual job fetching, cancellation, lock internals. */
export type WorkerMemberGaps =
  | 'keys'
  | 'toKey'
  | 'backend'
  | 'getBackend'
  | 'qualifiedName'
  | 'disconnect'
  | 'trace'
  | 'closing'
  | 'jobScheduler'
  | 'concurrency'
  | 'delay'
  | 'getNextJob'
  | 'processJob'
  | 'cancelJob'
  | 'cancelAllJobs'
  | 'extendJobLocks'
  | 'startStalledCheckTimer'
  | 'minimumBlockTimeout'
  | 'maximumBlockTimeout';

/** FlowProducer: Redis and backend internals (a flow lives in one namespace; `close` ends the connection). */
export type FlowProducerMemberGaps = 'toKey' | 'keys' | 'closing' | 'getBackend' | 'disconnect';

export type ClassMemberCheck = ExpectNone<{
  job: Exclude<keyof Bull.Job, keyof Zkq.Job | JobMemberGaps>;
  flowProducer: Exclude<keyof Bull.FlowProducer, keyof Zkq.FlowProducer | FlowProducerMemberGaps>;
  queue: Exclude<keyof Bull.Queue, keyof Zkq.Queue | QueueMemberGaps>;
  worker: Exclude<keyof Bull.Worker, keyof ZkqWorker.Worker | WorkerMemberGaps>;
}>;

/** Job properties whose zkq type does not fit where BullMQ's is expected. */
type JobPropertyMismatch<BJ, ZJ> = {
  [K in keyof BJ & keyof ZJ]: BJ[K] extends (...args: any[]) => unknown ? never : [ZJ[K]] extends [BJ[K]] ? never : K;
}[keyof BJ & keyof ZJ];
/**
 * Deliberate: zkq types `returnvalue` and `failedReason` as possibly
 * undefined (they are, before the job finishes), and `opts` is zkq's
 * JobsOptions (KeepJobs as one interface).
 */
export type JobPropertyDifferences = 'returnvalue' | 'failedReason' | 'opts';
export type JobPropertyCheck = ExpectNone<{
  differs: Exclude<
    JobPropertyMismatch<Bull.Job<EmailData, EmailResult, EmailJobName>, Zkq.Job<EmailData, EmailResult, EmailJobName>>,
    JobPropertyDifferences
  >;
}>;

/**
 * JobJson: the same fields, but zkq's carry values (`data`, `returnvalue`)
 * and the stack trace as an array, where BullMQ's carry their Redis-stored
 * strings; flow, repeat and deduplication fields are absent.
 */
export type JobJsonGaps =
  | 'parent'
  | 'parentKey'
  | 'repeatJobKey'
  | 'debounceId'
  | 'deduplicationId'
  | 'deferredFailure';
export type JobJsonCheck = ExpectNone<{
  missing: Exclude<keyof Bull.JobJson, keyof Zkq.JobJson | JobJsonGaps>;
  listedAsGapButPresent: Extract<JobJsonGaps, keyof Zkq.JobJson>;
  unlistedExtras: Exclude<keyof Zkq.JobJson, keyof Bull.JobJson>;
}>;
