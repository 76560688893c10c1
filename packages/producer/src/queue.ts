/**
 * Queue: adds jobs and inspects a queue (BullMQ's Queue, on ZooKeeper).
 *
 * ```ts
 * const queue = new Queue('emails', { connection: { connectionString: '127.0.0.1:2181' } });
 * const job = await queue.add('welcome', { to: 'ada@example.com' }, { attempts: 3 });
 * ```
 *
 * Every argument is validated here, before anything reaches ZooKeeper.
 */
import { EventEmitter } from 'node:events';
import {
  type CleanType,
  ClosedError,
  DEFAULT_PREFIX,
  type FinishedStatus,
  InvalidArgumentError,
  Job,
  type JobCounts,
  JobExistsError,
  JobNotFoundError,
  type JobState,
  JobStateError,
  type JobsOptions,
  type JobType,
  type Metrics,
  NodeExistsError,
  type ObliterateOptions,
  type QueueOptions,
  type RateLimiterOptions,
  type Session,
  SpanKind,
} from '@zkq/core';
import {
  type AddOutcome,
  addFlow,
  CallOrder,
  clean,
  deleteDeduplicationKey,
  drain,
  type EnqueueEntry,
  enqueueJobs,
  getDeduplicationJobId,
  getGlobalConcurrency,
  getGlobalRateLimit,
  getJobCounts,
  getMetrics,
  getRateLimitTtl,
  isMaxed,
  listJobIds,
  type MetricsKind,
  obliterate,
  openSession,
  promoteJobs,
  QueueStore,
  removeJob,
  removeRateLimit,
  removeSettings,
  requestCancel,
  retryJobs,
  type Span,
  setGlobalConcurrency,
  setGlobalRateLimit,
  setRateLimit,
  TelemetryAttributes,
  type Turn,
  trace,
  validateCancelReason,
  validateConnection,
  validateDeduplication,
  validateJobId,
  validateJobName,
  validateJobOptions,
  validateLimit,
  validatePrefix,
  validateQueueName,
  validateTelemetry,
  validateWindowMs,
} from '@zkq/core/internal';
import { buildRecords, type JobToBuild, parentLinkOf, prepareJob } from './job-records.js';
import { prometheusText } from './prometheus.js';

/** Typed events of a Queue. */
export interface QueueListener<JobBase extends Job = Job> {
  error: [error: Error];
  waiting: [job: JobBase];
  /** `add`/`addBulk` found a job with this custom id already and returned it instead (nothing was added). */
  duplicated: [jobId: string];
  paused: [];
  resumed: [];
  cleaned: [jobs: string[], type: string];
  removed: [jobId: string];
}

const CLEAN_TYPES = new Set<string>([
  'completed',
  'wait',
  'waiting',
  'active',
  'paused',
  'prioritized',
  'delayed',
  'failed',
]);

/** One job of `addBulk`. */
export interface BulkJob<DataType = unknown, NameType extends string = string> {
  name: NameType;
  data: DataType;
  opts?: JobsOptions;
}

/** Times an add whose existing job vanished before it was read is tried again. */
const ADD_EXISTING_ATTEMPTS = 3;

export class Queue<DataType = any, ResultType = any, NameType extends string = string> extends EventEmitter<
  QueueListener<Job<DataType, ResultType, NameType>>
> {
  readonly name: string;
  readonly opts: QueueOptions;
  private readonly ready: Promise<{ session: Session; store: QueueStore }>;
  /** Pipelined adds join the group commit in call order. */
  private readonly addOrder = new CallOrder();
  private closing: Promise<void> | undefined;
  /** Fires on close: a connect under way gives up. */
  private readonly closeSignal = new AbortController();
  /** The session once connected (before the queue's nodes are read), for close(). */
  private session: Session | undefined;

  constructor(name: string, opts: QueueOptions) {
    super();
    validateQueueName(name);
    if (!opts || typeof opts !== 'object')
      throw new InvalidArgumentError('Queue options with a connection are required', 'opts');
    validateConnection(opts.connection);
    validatePrefix(opts.prefix ?? DEFAULT_PREFIX);
    if (opts.defaultJobOptions) validateJobOptions(opts.defaultJobOptions);
    if (opts.telemetry !== undefined) validateTelemetry(opts.telemetry);
    this.name = name;
    this.opts = opts;
    const closed = this.closeSignal.signal;
    this.ready = openSession(opts.connection, opts.prefix ?? DEFAULT_PREFIX, closed).then(async (session) => {
      this.session = session;
      if (closed.aborted) throw new ClosedError(`Queue '${name}'`); // close() closes the session
      const store = new QueueStore(session, name);
      await store.init();
      return { session, store };
    });
    this.ready.catch((err) => {
      if (this.listenerCount('error') > 0 && !closed.aborted) this.emit('error', err);
    });
  }

  /** `<prefix>:<name>`, BullMQ's qualified name: what `opts.parent.queue` may name this queue by. */
  get qualifiedName(): string {
    return `${validatePrefix(this.opts.prefix ?? DEFAULT_PREFIX).slice(1)}:${this.name}`;
  }

  /** Resolves once connected and the queue's nodes exist; rejects with the connection error. */
  async waitUntilReady(): Promise<Session> {
    return (await this.ready).session;
  }

  /** The queue's ZooKeeper session, once connected. */
  get client(): Promise<Session> {
    return this.waitUntilReady();
  }

  private async store(): Promise<QueueStore> {
    if (this.closing) throw new ClosedError(`queue '${this.name}'`);
    return (await this.ready).store;
  }

  /**
   * Adds one job. With an existing custom `jobId`, resolves with the existing
   * job instead; with `deduplication` whose key is live, with the kept job
   * (one a ttl key outlived: its id, with this add's name, data and options, as BullMQ).
   */
  async add(name: NameType, data: DataType, opts?: JobsOptions): Promise<Job<DataType, ResultType, NameType>> {
    validateJobName(name);
    return this.addOrder.run((turn) =>
      this.trace(
        SpanKind.PRODUCER,
        'add',
        async (span, metadata) => {
          // The trace context travels inside the job (BullMQ's place for it), unless the job opts out.
          const traced = metadata && !opts?.telemetry?.omitContext ? { ...opts, telemetry: { metadata } } : opts;
          const [job] = await this.addJobs([{ name, data, ...(traced ? { opts: traced } : {}) }], turn);
          span?.setAttributes({ [TelemetryAttributes.JobName]: name, [TelemetryAttributes.JobId]: job?.id });
          return job as Job<DataType, ResultType, NameType>;
        },
        `${this.name}.${name}`,
      ),
    );
  }

  /**
   * Adds many jobs, all or nothing per transaction (chunks of up to 500 jobs /
   * ~700 KB each, so any size works). Jobs whose custom id exists come back as
   * the existing jobs.
   */
  async addBulk(jobs: BulkJob<DataType, NameType>[]): Promise<Job<DataType, ResultType, NameType>[]> {
    if (!Array.isArray(jobs)) throw new InvalidArgumentError('addBulk takes an array of { name, data, opts }', 'jobs');
    return this.addOrder.run((turn) =>
      this.trace(SpanKind.PRODUCER, 'addBulk', async (span, metadata) => {
        span?.setAttributes({
          [TelemetryAttributes.BulkNames]: jobs.map((j) => j?.name),
          [TelemetryAttributes.BulkCount]: jobs.length,
        });
        if (!metadata) return this.addJobs(jobs, turn);
        return this.addJobs(
          jobs.map((j) => {
            if (!j || typeof j !== 'object' || j.opts?.telemetry?.omitContext) return j;
            const given = j.opts?.telemetry?.metadata;
            return { ...j, opts: { ...j.opts, telemetry: { ...j.opts?.telemetry, metadata: given ?? metadata } } };
          }),
          turn,
        );
      }),
    );
  }

  /**
   * Adds jobs (no span: add and addBulk make it). `turn` was taken when the
   * call was made: the jobs join the group commit after those of every
   * earlier call, whatever each waited for (ids, the clock), so pipelined
   * adds are stored in call order. Jobs with a parent go last, each in its
   * own transaction, with the turn held until they are in.
   */
  private async addJobs(
    jobs: BulkJob<DataType, NameType>[],
    turn: Turn,
  ): Promise<Job<DataType, ResultType, NameType>[]> {
    const prepared = jobs.map((j, i): JobToBuild => {
      const p = prepareJob(j, this.opts.defaultJobOptions, `jobs[${i}]`);
      return { ...p, parentLink: parentLinkOf(p.opts, this.opts.prefix ?? DEFAULT_PREFIX) };
    });
    const store = await this.store();
    const entries = await buildRecords(store, prepared);
    const added = new Map<string, Job<DataType, ResultType, NameType>>();
    const children = entries.filter((e) => e.record.parentLink);
    // a call with children keeps its place until they are added: they go after its other jobs
    const held: Turn = children.length > 0 ? { wait: turn.wait, pass: () => {} } : turn;
    await this.enqueue(
      store,
      entries.filter((e) => !e.record.parentLink),
      added,
      held,
    );
    if (children.length > 0) await turn.wait();
    // a child goes on its own, counted into its parent's dependencies in its transaction
    for (const e of children) await this.addChild(store, e, added);
    return entries.map((e) => added.get(e.record.id) as Job<DataType, ResultType, NameType>);
  }

  /** Enqueues jobs without a parent; a custom id that exists answers with the existing job. */
  private async enqueue(
    store: QueueStore,
    entries: EnqueueEntry[],
    added: Map<string, Job<DataType, ResultType, NameType>>,
    turn: Turn,
  ): Promise<void> {
    let pending = entries;
    // A job whose id existed may be deleted before it is read (retention, remove): then the
    // id is free again, and that entry is enqueued anew rather than answered with a job not stored.
    for (let attempt = 0; pending.length > 0; attempt++) {
      // only the first round keeps the call's place: a later one enqueues what vanished meanwhile
      const outcomes = await enqueueJobs(store, pending, attempt === 0 ? turn : undefined);
      const vanished: EnqueueEntry[] = [];
      await Promise.all(
        pending.map(async (e, i) => {
          const outcome = outcomes[i] as AddOutcome;
          if (outcome.kind === 'added') {
            const job = new Job<DataType, ResultType, NameType>(store, e.record);
            if (e.record.state === 'waiting') this.emit('waiting', job);
            added.set(e.record.id, job);
            return;
          }
          if (outcome.kind === 'existing') this.emit('duplicated', outcome.id);
          const stored = await store.getJob(outcome.id);
          if (stored) added.set(e.record.id, new Job<DataType, ResultType, NameType>(store, stored.record));
          else if (outcome.kind === 'deduplicated') {
            // a throttle key outlives its job: BullMQ answers with the kept id and the add's own data
            added.set(e.record.id, new Job<DataType, ResultType, NameType>(store, { ...e.record, id: outcome.id }));
          } else if (attempt < ADD_EXISTING_ATTEMPTS) vanished.push(e);
          else throw new JobNotFoundError(outcome.id);
        }),
      );
      pending = vanished;
    }
  }

  /**
   * Adds a job with `opts.parent`, counted into the parent's dependencies in
   * the same transaction; MissingParentError when the parent does not exist.
   * A custom id that exists answers with the existing job, as without a parent.
   */
  private async addChild(
    store: QueueStore,
    e: EnqueueEntry,
    added: Map<string, Job<DataType, ResultType, NameType>>,
  ): Promise<void> {
    const { record } = e;
    for (let attempt = 0; ; attempt++) {
      try {
        await addFlow(store, [{ queue: this.name, record, lane: e.lane }], 'refuse');
        const job = new Job<DataType, ResultType, NameType>(store, record);
        if (record.state === 'waiting') this.emit('waiting', job);
        added.set(record.id, job);
        return;
      } catch (err) {
        const taken =
          (err instanceof JobExistsError && err.jobId === record.id) ||
          (err instanceof NodeExistsError && err.path === store.layout.job(record.id));
        if (!(taken && e.custom)) throw err;
      }
      this.emit('duplicated', record.id);
      const stored = await store.getJob(record.id);
      if (stored) {
        added.set(record.id, new Job<DataType, ResultType, NameType>(store, stored.record));
        return;
      }
      if (attempt >= ADD_EXISTING_ATTEMPTS) throw new JobNotFoundError(record.id);
    }
  }

  /** The job with this id, or undefined. */
  async getJob(jobId: string): Promise<Job<DataType, ResultType, NameType> | undefined> {
    validateJobId(jobId);
    const store = await this.store();
    const stored = await store.getJob(jobId);
    return stored ? new Job<DataType, ResultType, NameType>(store, stored.record) : undefined;
  }

  /** The job's state (`'unknown'` when it does not exist). */
  async getJobState(jobId: string): Promise<JobState | 'unknown'> {
    const job = await this.getJob(jobId);
    return job ? job.getState() : 'unknown';
  }

  /** Counts per state; all states when none are named. */
  async getJobCounts(...types: JobType[]): Promise<JobCounts> {
    return getJobCounts(await this.store(), types.flat() as JobType[]);
  }

  /** Count of jobs in the named states together. */
  async getJobCountByTypes(...types: JobType[]): Promise<number> {
    const counts = await this.getJobCounts(...types);
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  /** Jobs in the given states, `start`..`end` inclusive (-1: to the end) of each state's order. */
  async getJobs(
    types: JobType | JobType[] = ['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized'],
    start = 0,
    end = -1,
    asc = false,
  ): Promise<Job<DataType, ResultType, NameType>[]> {
    const store = await this.store();
    const list = Array.isArray(types) ? types : [types];
    const limit = end < 0 ? Number.MAX_SAFE_INTEGER : end + 1;
    const ids: string[] = [];
    for (const t of list) ids.push(...(await listJobIds(store, t, limit, asc)));
    const window = ids.slice(start, end < 0 ? undefined : end + 1);
    const stored = await Promise.all(window.map((id) => store.getJob(id)));
    return stored.flatMap((s) => (s ? [new Job<DataType, ResultType, NameType>(store, s.record)] : []));
  }

  async getWaiting(start = 0, end = -1) {
    return this.getJobs(['waiting'], start, end, true);
  }
  async getActive(start = 0, end = -1) {
    return this.getJobs(['active'], start, end, true);
  }
  async getDelayed(start = 0, end = -1) {
    return this.getJobs(['delayed'], start, end, true);
  }
  async getCompleted(start = 0, end = -1) {
    return this.getJobs(['completed'], start, end, false);
  }
  async getFailed(start = 0, end = -1) {
    return this.getJobs(['failed'], start, end, false);
  }
  /** Parents waiting for their children (flows), oldest first. */
  async getWaitingChildren(start = 0, end = -1) {
    return this.getJobs(['waiting-children'], start, end, true);
  }
  async getWaitingChildrenCount(): Promise<number> {
    return this.getJobCountByTypes('waiting-children');
  }
  /** Count of one state's jobs, as BullMQ's getters of the same names. */
  async getWaitingCount(): Promise<number> {
    return this.getJobCountByTypes('waiting');
  }
  async getActiveCount(): Promise<number> {
    return this.getJobCountByTypes('active');
  }
  async getDelayedCount(): Promise<number> {
    return this.getJobCountByTypes('delayed');
  }
  async getPrioritizedCount(): Promise<number> {
    return this.getJobCountByTypes('prioritized');
  }
  async getCompletedCount(): Promise<number> {
    return this.getJobCountByTypes('completed');
  }
  async getFailedCount(): Promise<number> {
    return this.getJobCountByTypes('failed');
  }
  /** Jobs yet to run: waiting (or paused), delayed, prioritized, and parents waiting for their children. */
  async count(): Promise<number> {
    return this.getJobCountByTypes('waiting', 'paused', 'delayed', 'prioritized', 'waiting-children');
  }

  /** Stops every worker of this queue from claiming new jobs (in-flight jobs finish). */
  async pause(): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'pause', async () => {
      const store = await this.store();
      await store.setPaused(true);
      await store.publish([{ event: 'paused', ts: Date.now() }]);
      this.emit('paused');
    });
  }

  /** Lets workers claim again. */
  async resume(): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'resume', async () => {
      const store = await this.store();
      await store.setPaused(false);
      await store.publish([{ event: 'resumed', ts: Date.now() }]);
      this.emit('resumed');
    });
  }

  async isPaused(): Promise<boolean> {
    return (await this.store()).isPaused();
  }

  // ---- global limits (every worker of the queue, every process) --------------------

  /**
   * At most `concurrency` jobs of this queue run at once, whatever the
   * workers (an integer >= 1). Resolves 1 when none was set (BullMQ's answer).
   */
  async setGlobalConcurrency(concurrency: number): Promise<number> {
    validateLimit(concurrency, 'concurrency');
    return setGlobalConcurrency(await this.store(), concurrency);
  }

  async getGlobalConcurrency(): Promise<number | null> {
    return getGlobalConcurrency(await this.store());
  }

  /** Resolves 1 when a global concurrency was removed. */
  async removeGlobalConcurrency(): Promise<number> {
    return removeSettings(await this.store(), ['concurrency']);
  }

  /** At most `max` jobs started per `duration` ms by all workers together (integers >= 1). */
  async setGlobalRateLimit(max: number, duration: number): Promise<number> {
    validateLimit(max, 'max');
    validateLimit(duration, 'duration');
    return setGlobalRateLimit(await this.store(), max, duration);
  }

  async getGlobalRateLimit(): Promise<RateLimiterOptions | null> {
    return getGlobalRateLimit(await this.store());
  }

  /** Resolves with how many of `max` and `duration` were removed. */
  async removeGlobalRateLimit(): Promise<number> {
    return removeSettings(await this.store(), ['max', 'duration']);
  }

  /** No worker of the queue starts a job for the next `ms` (0 or less ends such a window). */
  async rateLimit(ms: number): Promise<void> {
    validateWindowMs(ms);
    await setRateLimit(await this.store(), ms);
  }

  /** BullMQ's getRateLimitTtl: ms left of the rate-limit window (-2 without one; 0 when `maxJobs` is not reached). */
  async getRateLimitTtl(maxJobs?: number): Promise<number> {
    return getRateLimitTtl(await this.store(), maxJobs);
  }

  /** Ends the rate-limit window; resolves 1 when one was live. */
  async removeRateLimitKey(): Promise<number> {
    return removeRateLimit(await this.store());
  }

  /** Whether the active jobs reach the global concurrency. */
  async isMaxed(): Promise<boolean> {
    return isMaxed(await this.store());
  }

  // ---- queue control (docs/queue-control.md) ---------------------------------

  /**
   * Removes a job that is not active, wherever it is. Resolves 1 when the job
   * is gone (removed now, or not there), 0 when it is active and was left
   * alone (BullMQ's codes). A child leaves its parent's dependencies (the
   * last pending one releases the parent). `removeChildren` has no effect:
   * a removed parent's children stay and finish on their own.
   */
  async remove(jobId: string, _opts?: { removeChildren?: boolean }): Promise<number> {
    return this.trace(SpanKind.INTERNAL, 'remove', async (span) => {
      validateJobId(jobId);
      span?.setAttributes({ [TelemetryAttributes.JobId]: jobId });
      try {
        if (await removeJob(await this.store(), jobId)) this.emit('removed', jobId);
        return 1;
      } catch (err) {
        if (err instanceof JobStateError) return 0;
        throw err;
      }
    });
  }

  /**
   * Cancels a running job, in whichever process runs it: that worker's
   * processor sees its AbortSignal fire with `reason`, and the job then ends
   * as the processor's error says (failed, or retried). Resolves true when
   * the request reached the running attempt, false when the job is not
   * active (nothing is changed then). A processor that ignores its signal
   * is not stopped.
   */
  async cancelJob(jobId: string, reason?: string): Promise<boolean> {
    return this.trace(SpanKind.INTERNAL, 'cancelJob', async (span) => {
      validateJobId(jobId);
      validateCancelReason(reason);
      span?.setAttributes({ [TelemetryAttributes.JobId]: jobId });
      return requestCancel(await this.store(), jobId, reason);
    });
  }

  /** Removes every waiting (and prioritized) job and, with `delayed`, every delayed job; active jobs stay. */
  async drain(delayed = false): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'drain', async () => {
      await drain(await this.store(), delayed === true);
    });
  }

  /**
   * Removes up to `limit` jobs (0: all) of `type` older than `grace` ms —
   * finished before it for completed/failed, added before it otherwise — and
   * resolves with their ids. Active jobs are never removed. Emits `cleaned`.
   */
  async clean(grace: number, limit: number, type: CleanType = 'completed'): Promise<string[]> {
    return this.trace(SpanKind.INTERNAL, 'clean', async (span) => {
      if (typeof grace !== 'number' || !(grace >= 0))
        throw new InvalidArgumentError('grace must be a number >= 0', 'grace');
      if (typeof limit !== 'number' || !(limit >= 0))
        throw new InvalidArgumentError('limit must be a number >= 0', 'limit');
      if (!CLEAN_TYPES.has(type)) throw new InvalidArgumentError(`cannot clean jobs of type '${String(type)}'`, 'type');
      span?.setAttributes({
        [TelemetryAttributes.QueueGrace]: grace,
        [TelemetryAttributes.JobType]: type,
        [TelemetryAttributes.QueueCleanLimit]: limit,
      });
      const ids = await clean(await this.store(), grace, limit, type);
      this.emit('cleaned', ids, type === 'waiting' ? 'wait' : type);
      return ids;
    });
  }

  /**
   * Deletes the queue and everything in it, irreversibly. Refuses with
   * QueueNotEmptyError while jobs are active, unless `force`. Close the
   * queue's workers and QueueEvents first; use a new Queue object afterwards.
   */
  async obliterate(opts?: ObliterateOptions): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'obliterate', async () => {
      await obliterate(await this.store(), opts ?? {});
    });
  }

  /** Moves failed (or, with `state: 'completed'`, completed) jobs finished by `timestamp` back to waiting. */
  async retryJobs(opts: { count?: number; state?: FinishedStatus; timestamp?: number } = {}): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'retryJobs', async () => {
      if (opts.state !== undefined && opts.state !== 'failed' && opts.state !== 'completed')
        throw new InvalidArgumentError("state must be 'failed' or 'completed'", 'opts.state');
      await retryJobs(await this.store(), opts);
    });
  }

  /** Moves every delayed job to waiting now. */
  async promoteJobs(opts: { count?: number } = {}): Promise<void> {
    await this.trace(SpanKind.INTERNAL, 'promoteJobs', async () => {
      await promoteJobs(await this.store(), opts);
    });
  }

  // ---- deduplication (BullMQ's) -------------------------------------------------

  /** The id of the job that deduplication id `id` keeps, or null when its key is missing or stale. */
  async getDeduplicationJobId(id: string): Promise<string | null> {
    validateDeduplication({ id }, 'deduplication');
    return getDeduplicationJobId(await this.store(), id);
  }

  /** Deletes the key of deduplication id `id`, so the next add with it adds a job; resolves 1 if a live key was deleted, else 0. */
  async removeDeduplicationKey(id: string): Promise<number> {
    return this.trace(SpanKind.INTERNAL, 'removeDeduplicationKey', async (span) => {
      validateDeduplication({ id }, 'deduplication');
      span?.setAttributes({ [TelemetryAttributes.DeduplicationKey]: id });
      return deleteDeduplicationKey(await this.store(), id);
    });
  }

  // ---- metrics ----------------------------------------------------------------

  /**
   * BullMQ's getMetrics: jobs completed (or failed) per minute, newest first,
   * points `start`..`end` (-1: the oldest). Collected by workers with the
   * `metrics` option; see docs/metrics.md.
   */
  async getMetrics(type: MetricsKind, start = 0, end = -1): Promise<Metrics> {
    if (type !== 'completed' && type !== 'failed')
      throw new InvalidArgumentError("type must be 'completed' or 'failed'", 'type');
    if (!Number.isInteger(start) || !Number.isInteger(end))
      throw new InvalidArgumentError('start and end must be integers', 'start');
    return getMetrics(await this.store(), type, start, end);
  }

  /**
   * BullMQ's exportPrometheusMetrics: job counts per state and the completed
   * and failed totals in Prometheus's text format, with `globalVariables` as
   * extra labels of every sample. Read once per call, for the whole queue.
   */
  async exportPrometheusMetrics(globalVariables?: Record<string, string>): Promise<string> {
    const [counts, completed, failed] = await Promise.all([
      this.getJobCounts(),
      this.getMetrics('completed'),
      this.getMetrics('failed'),
    ]);
    return prometheusText(this.name, counts, completed.meta.count, failed.meta.count, globalVariables);
  }

  /** Runs `fn` in a span of the `telemetry` option (directly without it). */
  private trace<T>(
    kind: SpanKind,
    operation: string,
    fn: (span?: Span, metadata?: string) => Promise<T>,
    destination = this.name,
  ): Promise<T> {
    return trace(this.opts.telemetry, kind, this.name, operation, destination, fn, {
      propagate: kind === SpanKind.PRODUCER,
    });
  }

  /**
   * Closes the connection. Idempotent. A connect still under way is given
   * up; the session waits for the server at most 3 s (Session.close).
   */
  close(): Promise<void> {
    this.closeSignal.abort();
    this.closing ??= (async () => {
      // connected: closing the session ends reads still under way; connecting: the signal ends it
      if (!this.session) await this.ready.catch(() => undefined);
      await this.session?.close();
    })();
    return this.closing;
  }
}
