/**
 * ZooKeeperQueueBackend: BullMQ's IQueueBackend over the zkq protocol. The
 * class holds the connection lifecycle and identity; each operation lives
 * in the module of its kind (attempts, reads, control, meta, events), which
 * works on the same znode layout as zkq's own Queue and Worker.
 */
import { EventEmitter } from 'node:events';
import type { Session } from '@zkq/core';
import type { Trimmer as TrimmerType } from '@zkq/core/internal';
import { CallOrder, Trimmer, untilSilent } from '@zkq/core/internal';
import type {
  DependenciesOpts,
  FinishedStatus,
  IQueueBackend,
  JobJson,
  JobProgress,
  JobState,
  JobsOptions,
  JobType,
  KeepJobs,
  KeysMap,
  MinimalJob,
  MoveToDelayedOpts,
  MoveToWaitingChildrenOpts,
  ParentKeyOpts,
  RepeatableOptions,
  RetryJobOpts,
  RetryOptions,
  StreamReadRaw,
} from 'bullmq';
import * as attempts from './attempts.js';
import type { BackendContext } from './context.js';
import * as control from './control.js';
import * as dedup from './dedup.js';
import * as events from './events.js';
import * as flowReads from './flow-reads.js';
import * as flowRemoval from './flow-removal.js';
import * as flows from './flows.js';
import * as meta from './meta.js';
import * as reads from './reads.js';
import * as schedulers from './schedulers.js';

type Finished = FinishedStatus;

/** Longest close() of a backend that ZooKeeper does not answer, ms (zkq's Worker default closeTimeout). */
const CLOSE_TIMEOUT_MS = 5000;
/** Longest wait of close(true) for the server to confirm the session's end, ms. */
const FORCED_SESSION_CLOSE_MS = 1000;
type Keep = boolean | number | KeepJobs;

export class ZooKeeperQueueBackend extends EventEmitter implements IQueueBackend {
  /** Seconds: the smallest wait BullMQ's Worker asks for (watches have no rounding). */
  readonly minimumBlockTimeout = 0.001;
  /** Seconds: a wait ends by a watch, so an idle worker may wait long between polls. */
  readonly maximumBlockTimeout = 60;
  private closingPromise: Promise<void> | undefined;
  private readonly claimer: attempts.Claimer;
  private trimmerPromise: Promise<TrimmerType> | undefined;
  private readonly ready: Promise<void>;
  /** Pipelined adds are stored in call order, as on Redis (see CallOrder). */
  private readonly addOrder = new CallOrder();

  constructor(
    readonly ctx: BackendContext,
    /** Whether this backend owns the session (false for `forQueue` siblings). */
    private readonly ownsSession: boolean,
    private readonly role: { worker: boolean; listener: boolean },
  ) {
    super();
    this.claimer = new attempts.Claimer(ctx);
    this.ready = this.start();
    this.ready.catch((err) => this.emit('error', err));
  }

  private async start(): Promise<void> {
    if (this.ctx.name === '') {
      await this.ctx.shared.get(); // a FlowProducer's: connected, bound to no queue
      this.emit('ready');
      return;
    }
    const store = await this.ctx.store();
    if (this.role.worker) {
      await store.clock.now(); // retries are due on ZooKeeper's clock: know its offset before the first
      await this.ctx.startHousekeeping();
    }
    if (this.role.listener) await events.listen(this.ctx);
    this.emit('ready');
  }

  // ---- lifecycle ------------------------------------------------------------

  waitUntilReady(): Promise<void> {
    return this.ready;
  }

  get closing(): Promise<void> | undefined {
    return this.closingPromise;
  }

  /**
   * Leaves what this backend takes part in (events, housekeeping, metrics)
   * and closes its session. Bounded as zkq's Worker.close(): once ZooKeeper
   * has answered nothing for CLOSE_TIMEOUT_MS, the session is dropped
   * without waiting; `force` waits for no write, and at most a second for
   * the server to confirm the session's end.
   */
  close(force?: boolean): Promise<void> {
    this.closingPromise ??= (async () => {
      let session: Session | undefined;
      void this.ctx.shared.opened()?.then(
        (s) => {
          session = s;
        },
        () => undefined,
      );
      const answered = new AbortController();
      const silent = force ? Promise.resolve() : untilSilent(() => session, CLOSE_TIMEOUT_MS, answered.signal);
      // a release that fails once given up on is not the caller's any more (its writes were dropped)
      const released = this.release();
      released.catch(() => undefined);
      const gaveUp = await Promise.race([released.then(() => false), silent.then(() => true)]);
      answered.abort();
      const timeout = force ? FORCED_SESSION_CLOSE_MS : gaveUp ? 0 : undefined;
      if (this.ownsSession) await this.ctx.shared.close({ timeout });
      this.emit('close');
    })();
    return this.closingPromise;
  }

  private async release(): Promise<void> {
    await this.ready.catch(() => undefined);
    (await this.trimmerPromise?.catch(() => undefined))?.stop();
    await events.unlisten(this.ctx);
    await this.ctx.close();
  }

  disconnect(): Promise<void> {
    return this.close(true);
  }

  async setName(_name: string): Promise<void> {
    // ZooKeeper sessions carry no client name; workers are listed from their membership nodes.
  }

  forQueue(queueName: string, _prefix?: string): IQueueBackend {
    const { BackendContext: Ctx } = this.ctxModule;
    return new ZooKeeperQueueBackend(new Ctx(queueName, this.ctx.opts, this.ctx.shared, this.ctx.onError), false, {
      worker: false,
      listener: false,
    });
  }

  /** The context class, read from the instance so forQueue needs no import cycle. */
  private get ctxModule(): { BackendContext: typeof BackendContext } {
    return { BackendContext: this.ctx.constructor as typeof BackendContext };
  }

  get qualifiedName(): string {
    return `${this.ctx.prefix}:${this.ctx.name}`;
  }

  readonly keys: KeysMap = {};

  toKey(type: string): string {
    return `${this.qualifiedName}:${type}`;
  }

  parseNodeKey(key: string): { prefix: string; queueName: string; id: string } {
    const parts = key.split(':');
    const id = parts.pop() ?? '';
    const queueName = parts.pop() ?? '';
    return { prefix: parts.join(':'), queueName, id };
  }

  clientName(suffix = ''): string {
    return `${this.qualifiedName}${suffix}`;
  }

  // ---- adding ---------------------------------------------------------------

  async addJob(job: JobJson, jobId: string, parentKeyOpts?: ParentKeyOpts): Promise<string> {
    const [id] = await this.addJobs([{ job, jobId, ...(parentKeyOpts ? { parentKeyOpts } : {}) }]);
    return id as string;
  }

  addJobs(entries: { job: JobJson; jobId: string; parentKeyOpts?: ParentKeyOpts }[]): Promise<string[]> {
    return this.addOrder.run((turn) => attempts.addJobs(this.ctx, entries, turn));
  }

  async addFlow(
    entries: { jobData: JobJson; jobId: string; parentKeyOpts: ParentKeyOpts; prefix: string; queueName: string }[],
  ): Promise<[Error | null, string | number][]> {
    if (entries.length === 0) return [];
    // a FlowProducer's backend is bound to no queue: the flow runs from its root's
    const store = await this.ctx.shared.store((entries[0] as { queueName: string }).queueName);
    await store.init();
    if (entries.some((e) => (e.jobData.opts?.delay ?? 0) > 0)) await store.clock.now(); // due times: ZooKeeper's clock
    return flows.addFlowEntries(
      store,
      entries.map((e) => attempts.toFlowJob(store, e)),
    );
  }

  // ---- running --------------------------------------------------------------

  moveToActive(token: string, _name?: string): Promise<attempts.NextJob> {
    return this.claimer.next(token);
  }

  async moveToCompleted<T = unknown, R = unknown, N extends string = string>(
    job: MinimalJob<T, R, N>,
    returnValue: R,
    removeOnComplete: Keep,
    token: string,
    fetchNext: boolean,
  ): Promise<{ result: undefined | attempts.NextJob; finishedOn: number }> {
    const held = await attempts.heldBy(this.ctx, job.id as string, token, 'moveToFinished');
    const hasDeps = await flows.checkCompletable(this.ctx, held.job.record);
    const keep = attempts.retention('completed', removeOnComplete ?? this.ctx.opts.removeOnComplete);
    const remove = keep === 'remove';
    const apart = remove && flows.removedApart(held.job.record, 'completed', hasDeps);
    const finishedOn = await attempts.finish(
      this.ctx,
      held,
      { kind: 'completed', returnvalue: returnValue ?? null, remove: remove && !apart },
      'moveToFinished',
      held.progress,
      keep === 'remove' ? undefined : { keep, trimmer: () => this.trimmer() },
    );
    if (apart) await flows.removeFinished(this.ctx, held.job.record.id);
    await this.ctx.countFinished('completed', finishedOn);
    return { result: fetchNext && !this.closing ? await this.moveToActive(token) : undefined, finishedOn };
  }

  async moveToFailed<T = unknown, R = unknown, N extends string = string>(
    job: MinimalJob<T, R, N>,
    failedReason: string,
    removeOnFail: Keep,
    token: string,
    fetchNext: boolean,
    fieldsToUpdate?: Record<string, unknown>,
  ): Promise<{ result: undefined | attempts.NextJob; finishedOn: number }> {
    const held = await attempts.heldBy(this.ctx, job.id as string, token, 'moveToFinished');
    const keep = attempts.retention('failed', removeOnFail ?? this.ctx.opts.removeOnFail);
    const remove = keep === 'remove';
    const stacktrace = attempts.stacktraceOf(fieldsToUpdate);
    const apart = remove && flows.removedApart(held.job.record, 'failed');
    const finishedOn = await attempts.finish(
      this.ctx,
      attempts.withTrace(held),
      { kind: 'failed', reason: failedReason, stacktrace, remove: remove && !apart },
      'moveToFinished',
      held.progress,
      keep === 'remove' ? undefined : { keep, trimmer: () => this.trimmer() },
    );
    if (apart) await flows.removeFinished(this.ctx, held.job.record.id);
    await this.ctx.countFinished('failed', finishedOn);
    return { result: fetchNext && !this.closing ? await this.moveToActive(token) : undefined, finishedOn };
  }

  async moveToDelayed(
    jobId: string,
    timestamp: number,
    delay: number,
    token?: string,
    opts?: MoveToDelayedOpts,
  ): Promise<attempts.NextJob | []> {
    const held = await attempts.heldBy(this.ctx, jobId, token, 'moveToDelayed');
    const fields = opts?.fieldsToUpdate as Record<string, unknown> | undefined;
    const traced = attempts.withTrace(held);
    traced.job.record.delay = Math.max(delay, 0); // BullMQ's job.delay: the backoff applied
    const due = (await this.ctx.store()).clock.fromLocal(timestamp + Math.max(delay, 0));
    await attempts.finish(
      this.ctx,
      traced,
      {
        kind: 'retry',
        reason: typeof fields?.failedReason === 'string' ? fields.failedReason : '',
        stacktrace: attempts.stacktraceOf(fields),
        due,
        skipAttempt: opts?.skipAttempt === true,
      },
      'moveToDelayed',
      held.progress,
    );
    this.ctx.noteDue(due); // this worker promotes it when due, should the leader not
    if (opts?.fetchNext && token && !this.closing) {
      const next = await this.moveToActive(token);
      if (next[0]) return next;
    }
    return [];
  }

  async moveToWaitingChildren(jobId: string, token: string, opts?: MoveToWaitingChildrenOpts): Promise<boolean> {
    const held = this.ctx.held.get(jobId);
    const parked = await flows.moveToWaitingChildren(this.ctx, jobId, token, opts?.child);
    if (parked && held) attempts.release(this.ctx, jobId, held.job.token);
    return parked;
  }

  async moveJobFromActiveToWait(jobId: string, token?: string): Promise<number> {
    const held = await attempts.heldBy(this.ctx, jobId, token, 'moveJobFromActiveToWait');
    await attempts.finish(
      this.ctx,
      held,
      { kind: 'retry', reason: '', stacktrace: [], due: 0, skipAttempt: true },
      'moveJobFromActiveToWait',
    );
    return meta.rateLimitTtl(this.ctx);
  }

  async retryJob(jobId: string, _lifo: boolean, token?: string, opts?: RetryJobOpts): Promise<void> {
    const held = await attempts.heldBy(this.ctx, jobId, token, 'retryJob');
    const fields = opts?.fieldsToUpdate as Record<string, unknown> | undefined;
    await attempts.finish(
      this.ctx,
      attempts.withTrace(held),
      {
        kind: 'retry',
        reason: typeof fields?.failedReason === 'string' ? fields.failedReason : '',
        stacktrace: attempts.stacktraceOf(fields),
        due: 0,
      },
      'retryJob',
      held.progress,
    );
  }

  async moveStalledJobsToWait(): Promise<string[]> {
    return this.ctx.takeStalled();
  }

  extendLock(jobId: string, token: string, duration: number): Promise<number> {
    return attempts.extendLocks(this.ctx, [jobId], [token], duration).then((lost) => (lost.length ? 0 : 1));
  }

  extendLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    return attempts.extendLocks(this.ctx, jobIds, tokens, duration);
  }

  updateProgress(jobId: string, progress: JobProgress): Promise<void> {
    return attempts.updateProgress(this.ctx, jobId, progress);
  }

  async waitForJob(blockTimeout: number): Promise<{ member: string; score: number } | null> {
    if (this.closing) return null;
    const source = await this.ctx.source();
    await source.waitForWork(Math.max(blockTimeout, this.minimumBlockTimeout) * 1000);
    return null;
  }

  async disconnectBlocking(_wait?: boolean): Promise<void> {
    // BullMQ stops waiting (pause, close): out of the idle line too, or the Workers behind would wait on it
    const source = this.ctx.existingSource();
    source?.leaveLine();
    source?.poke();
  }

  async reconnectBlocking(): Promise<void> {
    // the wait runs on the session, which reconnects by itself
  }

  // ---- reads (reads.ts) ------------------------------------------------------

  getState(jobId: string): Promise<JobState | 'unknown'> {
    return reads.getState(this.ctx, jobId);
  }

  isFinished(jobId: string, returnValue?: boolean): Promise<number | [number, string]> {
    return reads.isFinished(this.ctx, jobId, returnValue);
  }

  isJobInState(state: string, jobId: string): Promise<boolean> {
    return reads.isJobInState(this.ctx, state, jobId);
  }

  getJobData(jobId: string): Promise<JobJson | undefined> {
    return reads.getJobData(this.ctx, jobId);
  }

  getCounts(types: JobType[], delayedTimestamp?: number): Promise<number[]> {
    return reads.getCounts(this.ctx, types, delayedTimestamp);
  }

  getCountsPerPriority(priorities: number[]): Promise<number[]> {
    return reads.getCountsPerPriority(this.ctx, priorities);
  }

  getRanges(types: JobType[], start?: number, end?: number, asc?: boolean): Promise<[string][]> {
    return reads.getRanges(this.ctx, types, start, end, asc);
  }

  getJobLogs(jobId: string, start: number, end: number, asc: boolean): Promise<{ logs: string[]; count: number }> {
    return reads.getJobLogs(this.ctx, jobId, start, end, asc);
  }

  async paginate(
    key: string,
    opts: { start: number; end: number; fetchJobs?: boolean },
  ): Promise<{
    cursor: string;
    items: { id: string; v?: unknown; err?: string }[];
    total: number;
    jobs?: JobJson[];
  }> {
    return (await flowReads.paginateDependencies(this.ctx, key, opts)) ?? reads.paginate(this.ctx, key, opts);
  }

  getMetrics(type: 'completed' | 'failed', start?: number, end?: number): Promise<[string[], string[], number]> {
    return reads.getMetrics(this.ctx, type, start, end);
  }

  getClientList(): Promise<string[]> {
    return reads.getClientList(this.ctx);
  }

  isMaxed(): Promise<boolean> {
    return reads.isMaxed(this.ctx);
  }

  getDependencyCounts(jobId: string, types: string[]): Promise<number[]> {
    return flowReads.getDependencyCounts(this.ctx, jobId, types);
  }

  getDependencies(jobId: string, opts: DependenciesOpts): ReturnType<IQueueBackend['getDependencies']> {
    return flowReads.getDependencies(this.ctx, jobId, opts);
  }

  getProcessedChildrenValues(jobId: string): Promise<Record<string, string>> {
    return flowReads.getProcessedChildrenValues(this.ctx, jobId);
  }

  getIgnoredChildrenFailures(jobId: string): Promise<Record<string, string>> {
    return flowReads.getIgnoredChildrenFailures(this.ctx, jobId);
  }

  getDeduplicationJobId(deduplicationId: string): Promise<string | null> {
    return reads.getDeduplicationJobId(this.ctx, deduplicationId);
  }

  // ---- control (control.ts) --------------------------------------------------

  pause(pause: boolean): Promise<void> {
    return control.pause(this.ctx, pause);
  }

  drain(delayed: boolean): Promise<void> {
    return control.drain(this.ctx, delayed);
  }

  cleanJobsByState(state: string, timestamp: number, limit = 0): Promise<string[]> {
    return control.cleanJobsByState(this.ctx, state, timestamp, limit);
  }

  obliterate(opts: { force: boolean; count: number }): Promise<number> {
    return control.obliterate(this.ctx, opts);
  }

  removeOrphanedJobs(count?: number, limit?: number): Promise<number> {
    return control.removeOrphanedJobs(this.ctx, count, limit);
  }

  promote(jobId: string): Promise<void> {
    return control.promote(this.ctx, jobId);
  }

  promoteJobs(count?: number): Promise<number> {
    return control.promoteJobs(this.ctx, count);
  }

  remove(jobId: string, removeChildren: boolean): Promise<number> {
    return control.remove(this.ctx, jobId, removeChildren);
  }

  removeUnprocessedChildren(jobId: string): Promise<void> {
    return flowRemoval.removeUnprocessedChildren(this.ctx, jobId);
  }

  removeChildDependency(jobId: string, parentKey: string): Promise<boolean> {
    return flowRemoval.removeChildDependency(this.ctx, jobId, parentKey);
  }

  retryFinishedJob<T = unknown, R = unknown, N extends string = string>(
    job: MinimalJob<T, R, N>,
    state: 'failed' | 'completed',
    opts?: RetryOptions,
  ): Promise<void> {
    return control.retryFinishedJob(this.ctx, job as attempts.AnyJob, state, opts);
  }

  retryFinishedJobs(state?: Finished, count?: number, timestamp?: number): Promise<number> {
    return control.retryFinishedJobs(this.ctx, state, count, timestamp);
  }

  changeDelay(jobId: string, delay: number): Promise<void> {
    return control.changeDelay(this.ctx, jobId, delay);
  }

  changePriority(jobId: string, priority?: number, lifo?: boolean): Promise<void> {
    return control.changePriority(this.ctx, jobId, priority, lifo);
  }

  updateData<T = unknown, R = unknown, N extends string = string>(job: MinimalJob<T, R, N>, data: T): Promise<void> {
    return control.updateData(this.ctx, job as attempts.AnyJob, data);
  }

  addLog(jobId: string, logRow: string, keepLogs?: number): Promise<number> {
    return control.addLog(this.ctx, jobId, logRow, keepLogs);
  }

  clearLogs(jobId: string, keepLogs?: number): Promise<void> {
    return control.clearLogs(this.ctx, jobId, keepLogs);
  }

  // ---- queue meta and rate limits (meta.ts) ----------------------------------

  setQueueMeta(values: Record<string, string | number>): Promise<number> {
    return meta.setQueueMeta(this.ctx, values);
  }

  getQueueMetaField(field: string): Promise<string | null> {
    return meta.getQueueMetaField(this.ctx, field);
  }

  getQueueMetaFields(fields: string[]): Promise<(string | null)[]> {
    return meta.getQueueMetaFields(this.ctx, fields);
  }

  getQueueMeta(): Promise<Record<string, string>> {
    return meta.getQueueMeta(this.ctx);
  }

  removeQueueMetaFields(fields: string[]): Promise<number> {
    return meta.removeQueueMetaFields(this.ctx, fields);
  }

  hasQueueMetaField(field: string): Promise<boolean> {
    return meta.hasQueueMetaField(this.ctx, field);
  }

  setRateLimit(expireTimeMs: number): Promise<void> {
    return meta.setRateLimit(this.ctx, expireTimeMs);
  }

  removeRateLimitKey(): Promise<number> {
    return meta.removeRateLimitKey(this.ctx);
  }

  async removeDeprecatedPriorityKey(): Promise<number> {
    return 0; // BullMQ's old Redis priority counter: nothing like it exists here
  }

  getRateLimitTtl(maxJobs?: number): Promise<number> {
    return meta.getRateLimitTtl(this.ctx, maxJobs);
  }

  // ---- events (events.ts) ----------------------------------------------------

  trimEvents(maxLength: number): Promise<number> {
    return events.trimEvents(this.ctx, maxLength);
  }

  publishEvent(fields: Record<string, string | number>, maxEvents: number): Promise<string> {
    return events.publishEvent(this.ctx, fields, maxEvents);
  }

  readEvents(id: string, blockTimeout: number): Promise<StreamReadRaw> {
    return events.readEvents(this.ctx, id, blockTimeout);
  }

  // ---- job schedulers (schedulers.ts) ---------------------------------------------

  addJobScheduler(
    jobSchedulerId: string,
    nextMillis: number,
    templateData: string,
    templateOpts: JobsOptions,
    opts: RepeatableOptions,
    delayedJobOpts: JobsOptions,
    _producerId?: string,
  ): Promise<[string, number]> {
    return schedulers.addJobScheduler(
      this.ctx,
      jobSchedulerId,
      nextMillis,
      templateData,
      templateOpts,
      opts,
      delayedJobOpts,
    );
  }

  updateJobSchedulerNextMillis(
    jobSchedulerId: string,
    nextMillis: number,
    _templateData: string,
    delayedJobOpts: JobsOptions,
    producerId?: string,
  ): Promise<string | null> {
    return schedulers.updateJobSchedulerNextMillis(this.ctx, jobSchedulerId, nextMillis, delayedJobOpts, producerId);
  }

  removeJobScheduler(jobSchedulerId: string): Promise<number> {
    return schedulers.removeJobScheduler(this.ctx, jobSchedulerId);
  }

  getJobScheduler(id: string): Promise<[string[] | null, string | null]> {
    return schedulers.getJobScheduler(this.ctx, id);
  }

  isJobScheduler(id: string): Promise<boolean> {
    return schedulers.isJobScheduler(this.ctx, id);
  }

  getJobSchedulerData(key: string): Promise<Record<string, string>> {
    return schedulers.getJobSchedulerData(this.ctx, key);
  }

  getJobSchedulersRange(start: number, end: number, asc: boolean): Promise<string[]> {
    return schedulers.getJobSchedulersRange(this.ctx, start, end, asc);
  }

  getJobSchedulersCount(): Promise<number> {
    return schedulers.getJobSchedulersCount(this.ctx);
  }

  // ---- deduplication keys (dedup.ts) ----------------------------------------------

  removeDeduplicationKey(deduplicationId: string, jobId: string): Promise<number> {
    return dedup.removeDeduplicationKey(this.ctx, deduplicationId, jobId);
  }

  deleteDeduplicationKey(deduplicationId: string): Promise<number> {
    return dedup.deleteDeduplicationKey(this.ctx, deduplicationId);
  }

  private trimmer(): Promise<TrimmerType> {
    this.trimmerPromise ??= this.ctx.store().then((store) => new Trimmer(store, this.ctx.onError));
    return this.trimmerPromise;
  }
}
