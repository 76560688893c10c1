/**
 * Job: one unit of work, shaped after BullMQ's Job. A Job is a snapshot of
 * its record plus methods that act on the queue through a narrow scope
 * (QueueStore for reads and moves, and, inside a worker, the hooks that
 * report progress and logs of the attempt it is running).
 */
import { InvalidArgumentError } from '../errors.js';
import { promoteJob, type RetryJobOptions, removeJob, retryJob } from './control.js';
import { JobStateError } from './errors.js';
import {
  countJobDependencies,
  type DependencyKind,
  type JobDependencies,
  keyPrefix,
  parentKeys,
  readJobDependencies,
} from './job-deps.js';
import { readJobLogs } from './protocol/logs.js';
import { assertJsonFaithful, type JobRecord } from './record.js';
import type { QueueStore } from './store.js';
import type {
  DependenciesOpts,
  FinishedStatus,
  JobJson,
  JobProgress,
  JobState,
  JobsOptions,
  ParentKeys,
} from './types.js';

/** What a job running in a worker reports through. */
export interface AttemptHooks {
  updateProgress(progress: JobProgress): Promise<void>;
  log(row: string): Promise<number>;
  /** Parks the running job until its children are done; false when none is pending. */
  moveToWaitingChildren(): Promise<boolean>;
}

/** Anything with a `waitUntilFinished` implementation (QueueEvents). */
export interface FinishedWaiter {
  waitJobFinished(jobId: string, ttl?: number): Promise<unknown>;
}

export class Job<DataType = any, ReturnType = any, NameType extends string = string> {
  id: string;
  name: NameType;
  data: DataType;
  opts: JobsOptions;
  progress: JobProgress;
  returnvalue: ReturnType | undefined;
  stacktrace: string[];
  delay: number;
  priority: number;
  timestamp: number;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCounter: number;
  failedReason: string | undefined;
  finishedOn: number | undefined;
  processedOn: number | undefined;
  processedBy: string | undefined;
  /**
   * The attempt this worker is running (inside a processor): a string that
   * names it among every attempt of every job of the queue, jobs added
   * together included, so it may key reports or locks across jobs.
   */
  token: string | undefined;
  /** The queue this job belongs to. */
  readonly queueName: string;
  /** The parent's key `<prefix>:<queue>:<id>` when this job is a child (flows). */
  parentKey: string | undefined;
  /** The parent's id and queue key, and this child's failure policy, when it is a child. */
  parent: ParentKeys | undefined;

  constructor(
    private readonly store: QueueStore | undefined,
    record: JobRecord,
    private readonly hooks?: AttemptHooks,
  ) {
    this.queueName = store?.queue ?? '';
    this.id = record.id;
    this.name = record.name as NameType;
    this.data = record.data as DataType;
    this.opts = record.opts;
    this.progress = record.progress;
    this.returnvalue = record.returnvalue as ReturnType | undefined;
    this.stacktrace = record.stacktrace ?? [];
    this.delay = record.delay;
    this.priority = record.priority;
    this.timestamp = record.timestamp;
    this.attemptsMade = record.attemptsMade;
    this.attemptsStarted = record.attemptsStarted;
    this.stalledCounter = record.stalledCounter;
    this.failedReason = record.failedReason;
    this.finishedOn = record.finishedOn;
    this.processedOn = record.processedOn;
    this.processedBy = record.processedBy;
    this.token = undefined;
    const link = record.parentLink;
    const keys = link && store ? parentKeys(store, link) : undefined;
    this.parentKey = keys?.parentKey;
    this.parent = keys?.parent;
  }

  /** The namespace the job's queue lives in (BullMQ's key prefix). */
  get prefix(): string {
    return this.store ? keyPrefix(this.store) : '';
  }

  /** `<prefix>:<queue>`: what `opts.parent.queue` may name this job's queue by. */
  get queueQualifiedName(): string {
    return `${this.prefix}:${this.queueName}`;
  }

  private scope(): QueueStore {
    if (!this.store) throw new JobStateError(this.id, 'this job object is detached from its queue');
    return this.store;
  }

  /** Reports progress of the running attempt (a number, or any JSON value). */
  async updateProgress(progress: JobProgress): Promise<void> {
    assertJsonFaithful(progress, 'progress');
    if (!this.hooks) throw new JobStateError(this.id, 'progress can only be reported by the worker running the job');
    this.progress = progress;
    await this.hooks.updateProgress(progress);
  }

  /**
   * Adds a log line to the running attempt; resolves with the number of lines so far.
   * The lines are written apart from the record (its log node) just before the attempt's
   * outcome: the last `keepLogs` of the job's lines, each cut to MAX_LOG_LINE_BYTES and
   * MAX_LOG_BYTES in all (sizes.ts).
   */
  async log(row: string): Promise<number> {
    if (typeof row !== 'string') throw new InvalidArgumentError('log row must be a string', 'row');
    if (!this.hooks) throw new JobStateError(this.id, 'logs can only be written by the worker running the job');
    return this.hooks.log(row);
  }

  /** The job's current state, or `'unknown'` when it no longer exists. */
  async getState(): Promise<JobState | 'unknown'> {
    return jobState(this.scope(), this.id);
  }

  async isCompleted(): Promise<boolean> {
    return (await this.getState()) === 'completed';
  }

  async isFailed(): Promise<boolean> {
    return (await this.getState()) === 'failed';
  }

  async isActive(): Promise<boolean> {
    return (await this.getState()) === 'active';
  }

  async isDelayed(): Promise<boolean> {
    return (await this.getState()) === 'delayed';
  }

  async isWaiting(): Promise<boolean> {
    const s = await this.getState();
    return s === 'waiting' || s === 'prioritized';
  }

  async isWaitingChildren(): Promise<boolean> {
    return (await this.getState()) === 'waiting-children';
  }

  // ---- flows: this job as a parent ------------------------------------------

  /**
   * Parks the running job in waiting-children until the children it has
   * pending are done (children added meanwhile with `opts.parent` count);
   * then it is claimed again. Resolves true when parked: throw
   * `new WaitingChildrenError()` next, the attempt ends without a result.
   * Resolves false when no child is pending (the attempt goes on); throws
   * FailedChildrenError when a child failed it (failParentOnFailure). Only
   * inside the processor of an inline (not threaded) worker; a `token`, if
   * given, must be the attempt's.
   */
  async moveToWaitingChildren(token?: string): Promise<boolean> {
    if (!this.hooks)
      throw new JobStateError(this.id, 'only the worker running the job can move it to waiting-children');
    if (token !== undefined && token !== this.token) {
      throw new JobStateError(this.id, `token ${token} is not the running attempt's`);
    }
    return this.hooks.moveToWaitingChildren();
  }

  /** The processed children's return values, by child key `<prefix>:<queue>:<id>`. */
  async getChildrenValues<CT = any>(): Promise<Record<string, CT>> {
    return (await readJobDependencies(this.scope(), this.id)).processed as Record<string, CT>;
  }

  /** The failure reasons of children whose failure was ignored (ignoreDependencyOnFailure), by child key. */
  async getIgnoredChildrenFailures(): Promise<Record<string, string>> {
    return (await readJobDependencies(this.scope(), this.id)).ignored ?? {};
  }

  /** @deprecated BullMQ's old name of getIgnoredChildrenFailures. */
  getFailedChildrenValues(): Promise<Record<string, string>> {
    return this.getIgnoredChildrenFailures();
  }

  /** The children by standing; with `opts`, pages of the lists named (cursor: an offset; next cursor 0 at the end). */
  getDependencies(opts?: DependenciesOpts): Promise<JobDependencies> {
    return readJobDependencies(this.scope(), this.id, opts);
  }

  /** How many children stand where, for the kinds named (all when none is). */
  getDependenciesCount(
    opts?: Partial<Record<DependencyKind, boolean>>,
  ): Promise<Partial<Record<DependencyKind, number>>> {
    return countJobDependencies(this.scope(), this.id, opts);
  }

  /**
   * Resolves with the return value once the job completes, rejects with its
   * failure reason once it fails (BullMQ's signature: pass a QueueEvents).
   */
  waitUntilFinished(queueEvents: FinishedWaiter, ttl?: number): Promise<ReturnType> {
    return queueEvents.waitJobFinished(this.id, ttl) as Promise<ReturnType>;
  }

  /** The stored log lines, oldest first (bounded: see `log`). */
  async getLogs(): Promise<string[]> {
    return (await readJobLogs(this.scope(), this.id))?.logs ?? [];
  }

  /**
   * Removes the job from the queue, wherever it is; throws JobStateError
   * while it is active. A child leaves its parent's dependencies (the last
   * pending one releases the parent). `removeChildren` has no effect: a
   * removed parent's children stay, and finish on their own.
   */
  async remove(_opts?: { removeChildren?: boolean }): Promise<void> {
    await removeJob(this.scope(), this.id);
  }

  /**
   * Moves the job, which must be `state` (default failed), back to waiting:
   * it runs again with its attempt counters reset (unless `opts` keeps them).
   * Throws JobStateError when it is in another state.
   */
  async retry(state: FinishedStatus = 'failed', opts: Omit<RetryJobOptions, 'state'> = {}): Promise<void> {
    await retryJob(this.scope(), this.id, { ...opts, state });
    if (opts.resetAttemptsMade !== false) this.attemptsMade = 0;
    if (opts.resetAttemptsStarted !== false) this.attemptsStarted = 0;
    this.stalledCounter = 0;
    this.failedReason = undefined;
    this.returnvalue = undefined;
    this.finishedOn = undefined;
    this.processedOn = undefined;
    this.processedBy = undefined;
  }

  /** Moves the delayed job to waiting now; throws JobStateError when it is not delayed. */
  async promote(): Promise<void> {
    await promoteJob(this.scope(), this.id);
    this.delay = 0;
  }

  toJSON(): JobJson {
    return {
      id: this.id,
      name: this.name,
      data: this.data,
      opts: this.opts,
      progress: this.progress,
      attemptsMade: this.attemptsMade,
      attemptsStarted: this.attemptsStarted,
      stalledCounter: this.stalledCounter,
      timestamp: this.timestamp,
      delay: this.delay,
      priority: this.priority,
      processedOn: this.processedOn,
      finishedOn: this.finishedOn,
      returnvalue: this.returnvalue,
      failedReason: this.failedReason,
      stacktrace: this.stacktrace,
      processedBy: this.processedBy,
    };
  }
}

/** The state of job `id`: an existing claim means active; otherwise the record says. */
export async function jobState(store: QueueStore, id: string): Promise<JobState | 'unknown'> {
  const [stored, claim] = await Promise.all([store.getJob(id), store.getClaim(id)]);
  if (!stored) return 'unknown';
  if (claim) return 'active';
  switch (stored.record.state) {
    case 'completed':
      return 'completed';
    case 'failed':
      return 'failed';
    case 'delayed':
      return 'delayed';
    case 'waiting-children':
      return 'waiting-children';
    default:
      return stored.record.priority > 0 ? 'prioritized' : 'waiting';
  }
}
