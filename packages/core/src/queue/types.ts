/**
 * Job and queue types, shaped after BullMQ v6 so that code written against
 * BullMQ compiles with its imports and connection options changed.
 */
import type { RetryOptions } from '../zk/retry.js';
import type { SaslOptions } from '../zk/sasl.js';
import type { ClockSource } from '../zk/session.js';
import type { TlsOptions } from '../zk/tls.js';
import type { AclEntry } from '../zk/types.js';
import type { Telemetry } from './telemetry.js';

/** Where and how to reach ZooKeeper (zkq's stand-in for BullMQ's Redis connection). */
export interface ConnectionOptions {
  /** `host:port[,host:port...]`. */
  connectionString: string;
  /** Requested session timeout, ms. Default 30000. */
  sessionTimeout?: number;
  /** Digest credentials, `user:password`; nodes are then created with the creator-only ACL. */
  auth?: string;
  /** ACL for created nodes (default: creator-only with `auth`, open without). */
  acl?: 'open' | 'creator' | readonly AclEntry[];
  /** TLS to ZooKeeper's secure client port: CA, client certificate and key, server name (PEM contents). */
  tls?: TlsOptions;
  /** SASL DIGEST-MD5 credentials, sent before any request on every connection (nodes are then creator-only). */
  sasl?: SaslOptions;
  /** Wait for the first connection at most this long, ms. Default 15000. */
  connectTimeout?: number;
  /** Wait for any reply at most this long, ms. Default 10000. */
  requestTimeout?: number;
  retry?: RetryOptions;
  /**
   * `'process'` judges due times, delays, scheduler ticks, rate-limit
   * windows, metrics minutes and retention ages on this process's
   * `Date.now()`, so fake timers in a test move them; default `'zookeeper'`,
   * ZooKeeper's clock. For tests in a single process only (see ClockSource).
   */
  clock?: ClockSource;
}

/** Keep at most `count` jobs, and none older than `age` seconds. */
export interface KeepJobs {
  /** Maximum age in seconds. */
  age?: number;
  /** Maximum count. */
  count?: number;
  /** Most jobs removed per clean-up pass. */
  limit?: number;
}

export type BuiltInBackoff = 'fixed' | 'exponential';

export interface BackoffOptions {
  type: BuiltInBackoff | (string & {});
  /** Base delay, ms. */
  delay?: number;
  /** 0..1: the share of the delay that is randomized. */
  jitter?: number;
}

export interface DefaultJobOptions {
  /** Creation time (ms since epoch); default now. */
  timestamp?: number;
  /** 0 (default, none) runs before prioritized jobs; among prioritized, lower runs first. 0..2^21. */
  priority?: number;
  /** Run no earlier than this many ms from now. */
  delay?: number;
  /** Total attempts, the first included. Default 1. */
  attempts?: number;
  /** Wait between attempts: ms (fixed) or options. */
  backoff?: number | BackoffOptions;
  /** Run before every other waiting job (newest lifo job first). */
  lifo?: boolean;
  /** Remove when completed: true, keep the last N, or KeepJobs. */
  removeOnComplete?: boolean | number | KeepJobs;
  /** Remove when failed: true, keep the last N, or KeepJobs. */
  removeOnFail?: boolean | number | KeepJobs;
  /** Log lines kept per job. */
  keepLogs?: number;
  /** Stack trace lines kept per failed attempt. */
  stackTraceLimit?: number;
  /** Refuse the job when its data is larger than this many bytes. */
  sizeLimit?: number;
}

/**
 * BullMQ's deduplication: while a job added with `id` is kept (see dedup.ts
 * in @zkq/core for when a key is live), an add with the same `id` adds
 * nothing and resolves with the kept job.
 */
export interface DeduplicationOptions {
  /** The deduplication id (any non-empty string). */
  id: string;
  /** Throttle: the key is live this many ms (ZooKeeper's clock), whatever became of its job. */
  ttl?: number;
  /** With `ttl`: a deduplicated add starts the ttl again. */
  extend?: boolean;
  /** A duplicate replaces the kept job while that job is still delayed. */
  replace?: boolean;
  /** A duplicate moves the kept job, while delayed, to its own delay from its own timestamp. */
  reschedule?: boolean;
  /** A duplicate of an active job is kept (the latest only) and added when the active one finishes. */
  keepLastIfActive?: boolean;
}

/** The parent a job is added as a child of (flows): its id and its queue's name, or BullMQ's `<prefix>:<queue>`. */
export interface ParentOptions {
  id: string;
  queue: string;
}

export interface BaseJobOptions extends DefaultJobOptions {
  /** Custom job id: an existing id makes `add` return the existing job. */
  jobId?: string;
  /** Add the job as a child of this existing job, which waits for it (flows; see FlowProducer). */
  parent?: ParentOptions;
  /** Accepted for compatibility; zkq has no repeatable jobs yet. */
  repeatJobKey?: string;
}

/** Options stored with a job besides the base ones (BullMQ's CompressableJobOptions, zkq's subset). */
export interface CompressableJobOptions {
  /** Deduplication (BullMQ's): a duplicate adds nothing while the kept job's key is live. */
  deduplication?: DeduplicationOptions;
  /**
   * Trace context (BullMQ's): `metadata` is set by a Queue with the
   * `telemetry` option, the producer's span serialized, and continued by the
   * worker's `process` span. `omitContext: true` keeps the job out of the trace.
   */
  telemetry?: { metadata?: string; omitContext?: boolean };
  /** A child's final failure fails its parent (the parent fails at its next claim). */
  failParentOnFailure?: boolean;
  /** A child's final failure lets the parent run now, whatever is still pending. */
  continueParentOnFailure?: boolean;
  /** A child's final failure counts as done for its parent, its reason kept (`getIgnoredChildrenFailures`). */
  ignoreDependencyOnFailure?: boolean;
  /** A child's final failure takes it out of its parent's dependencies. */
  removeDependencyOnFailure?: boolean;
}

export type JobsOptions = BaseJobOptions & CompressableJobOptions;

export type JobState = 'completed' | 'failed' | 'active' | 'delayed' | 'prioritized' | 'waiting' | 'waiting-children';
export type FinishedStatus = 'completed' | 'failed';
export type JobType = JobState | 'paused' | 'repeat' | 'wait';
export type JobProgress = string | boolean | number | object;

/** Options common to Queue, Worker and QueueEvents. */
export interface QueueBaseOptions {
  connection: ConnectionOptions;
  /** Namespace node of every queue, default `zkq`. */
  prefix?: string;
  /** Accepted for compatibility and ignored: BullMQ's Redis version check has no ZooKeeper counterpart. */
  skipVersionCheck?: boolean;
  /** Accepted for compatibility and ignored (deprecated and unused in BullMQ too). */
  blockingConnection?: boolean;
}

export interface QueueOptions extends QueueBaseOptions {
  defaultJobOptions?: DefaultJobOptions;
  /** BullMQ's Telemetry (e.g. bullmq-otel): spans for add and queue operations. */
  telemetry?: Telemetry;
}

/**
 * A child's parent as BullMQ names it: the parent's id, its queue's key
 * `<prefix>:<queue>`, and the child's failure policy (fpof, rdof, idof, cpof).
 */
export interface ParentKeys {
  id: string;
  queueKey: string;
  fpof?: boolean;
  rdof?: boolean;
  idof?: boolean;
  cpof?: boolean;
}

/** A page of one list of dependencies: from offset `cursor`, `count` entries (default 20). */
export interface DependencyOpts {
  cursor?: number;
  count?: number;
}

/** Which lists `job.getDependencies` reads, a page each (all, whole, when none is named). */
export interface DependenciesOpts {
  processed?: DependencyOpts;
  unprocessed?: DependencyOpts;
  ignored?: DependencyOpts;
  failed?: DependencyOpts;
}

/** What a job looks like serialized (BullMQ's JobJson, simplified). */
export interface JobJson {
  id: string;
  name: string;
  data: unknown;
  opts: JobsOptions;
  progress: JobProgress;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCounter: number;
  timestamp: number;
  delay: number;
  priority: number;
  processedOn?: number;
  finishedOn?: number;
  returnvalue?: unknown;
  failedReason?: string;
  stacktrace: string[];
  processedBy?: string;
}
