/**
 * Worker: claims jobs of a queue and runs them, `concurrency` at a time
 * (BullMQ's Worker, on ZooKeeper).
 *
 * ```ts
 * const worker = new Worker('emails', async (job) => send(job.data), {
 *   connection: { connectionString: '127.0.0.1:2181' },
 *   concurrency: 10,
 * });
 * ```
 *
 * A processor function runs inline; a file path or URL runs on a piscina
 * thread pool (sandbox/pool.ts), `jobsPerThread` jobs at once per thread; a
 * file that does not exist is refused here (sandbox/processor-file.ts).
 * The claim protocol and its fencing are described in @zkq/core's
 * transitions.ts; this class drives it: JobSource claims, LeaseRenewer keeps
 * claims alive, Finisher writes results in batches.
 */

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Barrier,
  BatchBarrier,
  ClosedError,
  DEFAULT_PREFIX,
  DoubleBarrier,
  InvalidArgumentError,
  type Job,
  type JobProgress,
  RateLimitError,
  type Session,
  SessionClosedError,
} from '@zkq/core';
import {
  CancelWatch,
  type ClaimedJob,
  DEFAULT_METRICS_DATA_POINTS,
  type Finish,
  Finisher,
  type FinishResult,
  Housekeeper,
  JobSource,
  liveWindow,
  MetricsCollector,
  openSession,
  type PauseState,
  prepareTrims,
  QueueStore,
  type Span,
  setRateLimit,
  Trimmer,
  untilSilent,
  validatePrefix,
  validateQueueName,
} from '@zkq/core/internal';
import { Attempt } from './attempt.js';

import { setWorkerStore } from './internals.js';
import { LeaseRenewer } from './lease-renewer.js';
import {
  DEFAULT_CLOSE_TIMEOUT_MS,
  DEFAULT_DRAIN_DELAY_S,
  DEFAULT_LOCK_DURATION_MS,
  DEFAULT_MAX_RATE_LIMIT_DELAY_MS,
  DEFAULT_MAX_STALLED_COUNT,
  DEFAULT_RUN_RETRY_DELAY_MS,
  DEFAULT_STALLED_INTERVAL_MS,
  type Processor,
  validateWorkerOptions,
  type WorkerOptions,
} from './options.js';
import { ThreadPool } from './sandbox/pool.js';
import { checkProcessorFile } from './sandbox/processor-file.js';
import { WorkerTracing } from './tracing.js';

/** Typed events of a Worker (BullMQ's WorkerListener, plus `lost`). */
export interface WorkerListener<T = any, R = any, N extends string = string> {
  active: [job: Job<T, R, N>, prev: string];
  completed: [job: Job<T, R, N>, result: R, prev: string];
  failed: [job: Job<T, R, N> | undefined, error: Error, prev: string];
  progress: [job: Job<T, R, N>, progress: JobProgress];
  /** The worker lost a job it was running (claim revoked); its result was dropped. */
  lost: [job: Job<T, R, N>, error: Error];
  stalled: [jobId: string, prev: string];
  error: [failedReason: Error];
  drained: [];
  ready: [];
  /** All members of the batch-start barrier have joined: claiming starts. */
  barrierPassed: [];
  paused: [];
  resumed: [];
  closing: [msg: string];
  closed: [];
}

/** Pause before re-arming the pause-flag watch after a failure, ms. */
const PAUSE_REARM_RETRY_MS = 500;
/** With a thread pool, a claim waits for this share of the slots to be free... */
const GATHER_SHARE = 0.8;
/** ...or this long after the first one freed, ms (see gatherFor). */
const GATHER_MS = 1;
/** Longest wait of close(true) for the server to confirm the session's end, ms. */
const FORCED_SESSION_CLOSE_MS = 1000;

export class Worker<DataType = any, ResultType = any, NameType extends string = string> extends EventEmitter<
  WorkerListener<DataType, ResultType, NameType>
> {
  readonly name: string;
  readonly id: string;
  readonly opts: Required<Pick<WorkerOptions, 'concurrency' | 'lockDuration' | 'maxStalledCount'>> & WorkerOptions;
  private readonly processorFn: Processor<DataType, ResultType, NameType> | undefined;
  private readonly pool: ThreadPool | undefined;
  private readonly attempts = new Map<string, Attempt>();
  private session: Session | undefined;
  private store: QueueStore | undefined;
  private source: JobSource | undefined;
  private finisher: Finisher | undefined;
  private trimmer: Trimmer | undefined;
  private renewer: LeaseRenewer | undefined;
  private housekeeper: Housekeeper | undefined;
  private barrier: Barrier | undefined;
  private collector: MetricsCollector | undefined;
  private cancels: CancelWatch | undefined;
  private readonly tracing: WorkerTracing;
  /** Settles when start-up is done (connected, registered) or has failed. */
  private readonly started = deferred();
  /** Fires on close: ends waits that would otherwise outlive the worker (the barrier). */
  private readonly closeSignal = new AbortController();
  private running: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private forced = false;
  /** Settles when close() stops waiting for ZooKeeper (forced, or no answer for `closeTimeout`). */
  private readonly quit = deferred();
  /** close() has reached the session: one opened after this is closed at once. */
  private sessionClosing = false;
  /**
   * The queue's pause flag as last read, with the version of `meta` it was
   * read at (claims check it); undefined from a change until it is read
   * again: the worker holds meanwhile.
   */
  private pauseState: PauseState | undefined;
  private localPaused = false;
  private wakeLoop: (() => void) | undefined;
  /** The claim under way and the start of what it got: pause() waits for it. */
  private claiming: Promise<void> | undefined;
  private hadWork = false;
  /** The last take found nothing to claim, and nothing was claimed since: the loop waits for work. */
  private waitingForWork = false;
  /** When the first slot freed that a claim is still waiting to fill with others (see gatherFor). */
  private gatherSince: number | undefined;
  /** After a RateLimitError: no claim before this time (performance.now()). */
  private limitedUntil = 0;

  /** A RateLimitError to throw from a processor after `rateLimit(ms)` (BullMQ's Worker.RateLimitError). */
  static RateLimitError(): RateLimitError {
    return new RateLimitError();
  }

  constructor(name: string, processor: Processor<DataType, ResultType, NameType> | string | URL, opts: WorkerOptions) {
    super();
    validateQueueName(name);
    validateWorkerOptions(opts);
    if (opts.prefix !== undefined) validatePrefix(opts.prefix);
    if (typeof processor !== 'function' && typeof processor !== 'string' && !(processor instanceof URL)) {
      throw new InvalidArgumentError('processor must be an async function, a file path or a URL', 'processor');
    }
    if (typeof processor !== 'function') checkProcessorFile(processor);
    this.name = name;
    this.id =
      opts.name ?? `${hostname().replace(/[^A-Za-z0-9._-]/g, '-')}-${process.pid}-${randomBytes(3).toString('hex')}`;
    const concurrency = opts.concurrency ?? 1;
    this.opts = {
      ...opts,
      concurrency,
      lockDuration: opts.lockDuration ?? DEFAULT_LOCK_DURATION_MS,
      maxStalledCount: opts.maxStalledCount ?? DEFAULT_MAX_STALLED_COUNT,
    };
    this.tracing = new WorkerTracing(opts.telemetry, name, { id: this.id, name: opts.name });
    if (typeof processor === 'function') this.processorFn = processor;
    else {
      const sizes = { concurrency, threads: opts.threads, jobsPerThread: opts.jobsPerThread };
      this.pool = new ThreadPool(processor, sizes);
    }
    if (opts.autorun !== false) {
      this.run().catch((err) => this.emitError(err));
    }
  }

  /** Starts claiming and processing; resolves when the worker has closed. */
  run(): Promise<void> {
    if (this.closing) return Promise.reject(new ClosedError(`worker of '${this.name}'`));
    this.running ??= this.start()
      .then(() => this.passBarrier())
      .then(() => this.loop());
    return this.running;
  }

  /** The worker's ZooKeeper session, once connected (diagnostics, tests, recipes sharing it). */
  get client(): Promise<Session> {
    return this.waitUntilReady().then(() => this.session as Session);
  }

  /** Resolves once connected and registered; rejects if that fails or the worker closes first. */
  waitUntilReady(): Promise<void> {
    return this.started.promise;
  }

  isRunning(): boolean {
    return this.running !== undefined && !this.closing;
  }

  isPaused(): boolean {
    return this.localPaused;
  }

  private async start(): Promise<void> {
    try {
      await this.connect();
      this.started.resolve();
    } catch (err) {
      this.started.reject(err);
      throw err;
    }
  }

  private async connect(): Promise<void> {
    const session = await openSession(this.opts.connection, this.opts.prefix ?? DEFAULT_PREFIX);
    if (this.sessionClosing) {
      // close() gave up on this connect: nothing else would close the session
      void session.close({ timeout: 0 });
      throw new ClosedError(`worker of '${this.name}'`);
    }
    this.session = session;
    const store = new QueueStore(session, this.name);
    await store.init();
    // Known before the first job ends: its finish then sends one transaction and reads nothing.
    await Promise.all([
      store.containers.prepare(store.layout.completedDir),
      store.containers.prepare(store.layout.failedDir),
      prepareTrims(store),
    ]);
    this.store = store;
    setWorkerStore(this, store);
    this.finisher = new Finisher(store, (err) => this.emitError(err));
    if (this.opts.metrics) {
      const max = this.opts.metrics.maxDataPoints ?? DEFAULT_METRICS_DATA_POINTS;
      this.collector = new MetricsCollector(store, max, (err) => this.emitError(err));
    }
    this.trimmer = new Trimmer(store, (err) => this.emitError(err));
    this.source = new JobSource(store, () => this.attempts.keys(), {
      workerId: this.id,
      lockDuration: this.opts.lockDuration,
      idlePollMs: (this.opts.drainDelay ?? DEFAULT_DRAIN_DELAY_S) * 1000,
      onWarning: (err) => this.emitError(err),
      limiter: this.opts.limiter,
      maximumRateLimitDelay: this.opts.maximumRateLimitDelay,
      held: () => this.queuePaused() || this.localPaused || this.closing !== undefined,
      pauseVersion: () => this.pauseState?.version,
    });
    this.renewer = new LeaseRenewer(
      store,
      this.id,
      this.opts.lockDuration,
      this.opts.lockRenewTime ?? this.opts.lockDuration / 2,
      () => [...this.attempts.values()].filter((a) => a.holdsClaim).map((a) => a.lease()),
      (lease) => this.attempts.get(lease.id)?.revokeIf(lease),
      (err) => this.emitError(err as Error),
    );
    this.renewer.start();
    // requests to cancel a job this worker runs, filed under its id (Queue.cancelJob, zkq cancel)
    this.cancels = new CancelWatch(store, {
      owner: this.id,
      holding: () => this.attempts.size > 0,
      tokenOf: (id) => this.attempts.get(id)?.token,
      cancel: (r) => this.attempts.get(r.id)?.cancel(r.reason),
      onError: (err) => this.emitError(err),
    });
    session.on('reconnected', ({ newSession }) => {
      if (newSession) void this.renewer?.renewAfter();
      this.nudge();
    });
    await this.register();
    session.onNewSession(() => this.register());
    await store.clock.now(); // retries are due on ZooKeeper's clock: know its offset before the first
    await this.watchPause();
    if (this.opts.housekeeping !== false) await this.startHousekeeping(store);
    this.emit('ready');
  }

  private async startHousekeeping(store: QueueStore): Promise<void> {
    const keeper = new Housekeeper(store, this.id, this.opts.stalledInterval ?? DEFAULT_STALLED_INTERVAL_MS);
    keeper.on('stalled', (jobId) => this.emit('stalled', jobId, 'active'));
    keeper.on('error', (err) => this.emitError(err));
    this.housekeeper = keeper;
    await keeper.start();
  }

  /**
   * Batch start: claims nothing until `barrier.size` workers have joined the
   * barrier `barriers/<name>` of this queue; then all start together. Each
   * batch is a generation of its own (`BatchBarrier`): a worker that joins
   * after a batch started waits for the next `size`, however many batches
   * used the name before.
   */
  private async passBarrier(): Promise<void> {
    const b = this.opts.barrier;
    if (!b || this.closing) return;
    const store = this.store as QueueStore;
    const path = `${store.layout.barriersDir}/${b.name}`;
    const options = { size: b.size, id: this.id };
    // each batch of `size` is a generation of its own: a second batch under the same name waits for all its members
    this.barrier = b.double
      ? new DoubleBarrier(store.session, path, options)
      : new BatchBarrier(store.session, path, options);
    try {
      await this.barrier.enter({
        signal: this.closeSignal.signal,
        ...(b.timeout !== undefined ? { timeout: b.timeout } : {}),
      });
    } catch (err) {
      if (this.closing) return; // closed while waiting
      throw err;
    }
    this.emit('barrierPassed');
  }

  /**
   * Leaves the batch-start barrier. With `barrier.double`, resolves once every
   * member of the batch has left: the whole batch is done.
   */
  async leaveBarrier(options: { timeout?: number } = {}): Promise<void> {
    if (!this.barrier) throw new InvalidArgumentError('this worker has no barrier option', 'barrier');
    if (this.barrier instanceof DoubleBarrier) await this.barrier.leave(options);
    else await this.barrier.leave();
  }

  /** Whether this worker is the queue's housekeeping leader now. */
  get isLeader(): boolean {
    return this.housekeeper?.isLeader ?? false;
  }

  /** EPHEMERAL `workers/<id>` so operators (and the leader) see live workers; made again on every new session. */
  private async register(): Promise<void> {
    const store = this.store as QueueStore;
    const info = {
      id: this.id,
      host: hostname(),
      pid: process.pid,
      concurrency: this.opts.concurrency,
      startedAt: Date.now(),
    };
    await store.registerWorker(this.id, info);
  }

  /**
   * Follows the queue's pause flag; a failed re-arm is retried until close
   * (the flag must never go unwatched). From a change until the flag is read
   * again, the worker holds: the flag and version it knows are stale.
   */
  private async watchPause(): Promise<void> {
    const store = this.store as QueueStore;
    const rearm = () => {
      this.pauseState = undefined;
      if (this.closing) return;
      this.watchPause().catch((err) => {
        this.emitError(err);
        if (!this.closing) setTimeout(rearm, PAUSE_REARM_RETRY_MS).unref();
      });
    };
    this.pauseState = await store.pauseState(rearm);
    this.nudge();
  }

  /** Paused, or the flag changed and is not read again yet. */
  private queuePaused(): boolean {
    return this.pauseState?.paused !== false;
  }

  /** Wakes the claim loop and ends its idle wait for work (pause changed, reconnected, resumed, closing). */
  private nudge(): void {
    this.wakeClaimLoop();
    this.source?.poke();
  }

  /**
   * Wakes the claim loop where it waits for a free slot or for a hold to end.
   * A wait for work goes on: a slot freed brings no work, and ending that
   * wait would cost a look at the head and at the line of idle workers.
   */
  private wakeClaimLoop(): void {
    const w = this.wakeLoop;
    this.wakeLoop = undefined;
    w?.();
  }

  /** Waits for a nudge, or `ms` at most. */
  private waitForNudge(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => this.wakeClaimLoop(), ms);
      this.wakeLoop = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /**
   * Opens a window of `ms` in which no worker of the queue starts a job
   * (BullMQ's Worker.rateLimit); throw `Worker.RateLimitError()` from the
   * processor next to put the current job back.
   */
  async rateLimit(ms: number): Promise<void> {
    await this.waitUntilReady();
    await setRateLimit(this.store as QueueStore, ms);
  }

  /** A processor threw RateLimitError: claim nothing until the queue's window ends (at most maximumRateLimitDelay). */
  private async holdForRateLimit(): Promise<void> {
    const ttl = (await liveWindow(this.store as QueueStore))?.ttl ?? 0;
    const hold = Math.min(ttl, this.opts.maximumRateLimitDelay ?? DEFAULT_MAX_RATE_LIMIT_DELAY_MS);
    this.limitedUntil = Math.max(this.limitedUntil, performance.now() + hold);
  }

  private async loop(): Promise<void> {
    const source = this.source as JobSource;
    while (!this.closing) {
      if (this.queuePaused() || this.localPaused) {
        source.leaveLine();
        await this.waitForNudge();
        continue;
      }
      const hold = this.limitedUntil - performance.now();
      if (hold > 0) {
        source.leaveLine();
        await this.waitForNudge(hold);
        continue;
      }
      const running = this.runningJobs();
      const free = this.freeSlots(running);
      if (free <= 0) {
        source.leaveLine();
        await this.waitForNudge();
        continue;
      }
      const gather = this.gatherFor(free, running);
      if (gather > 0) {
        await this.waitForNudge(gather);
        continue;
      }
      this.claiming = this.claimAndStart(source, free);
      try {
        await this.claiming;
      } catch (err) {
        if (this.closing) break;
        this.emitError(err);
        await sleep(this.opts.runRetryDelay ?? DEFAULT_RUN_RETRY_DELAY_MS);
      } finally {
        this.claiming = undefined;
      }
    }
  }

  /**
   * Claims up to `free` jobs and starts them. A claim sent before a pause or
   * a close still starts what it got: those jobs are this worker's now
   * (dropped, their claims would vanish with the session and count a stall);
   * a forced close alone leaves them to other workers.
   */
  private async claimAndStart(source: JobSource, free: number): Promise<void> {
    const claimed = await source.claim(free, () => {
      this.waitingForWork = true;
      this.onIdle();
    });
    if (claimed.length > 0) this.waitingForWork = false;
    for (const c of claimed) {
      if (this.forced) break;
      this.hadWork = true;
      this.process(c);
    }
  }

  /**
   * How much longer to wait for more free slots before claiming, ms (0:
   * claim now). Results of jobs on threads come back spread over a
   * millisecond or two, and a claim round costs about as much for a few
   * jobs as for all of them: claiming at the first free slot would make
   * every other round small. So with a thread pool, a claim waits until
   * GATHER_SHARE of the slots are free, GATHER_MS after the first one
   * freed at most; never while nothing runs (an idle worker claims at once).
   */
  private gatherFor(free: number, running: number): number {
    if (!this.pool || free >= Math.ceil(this.opts.concurrency * GATHER_SHARE) || running === 0) {
      this.gatherSince = undefined;
      return 0;
    }
    this.gatherSince ??= performance.now();
    const left = this.gatherSince + GATHER_MS - performance.now();
    if (left > 0) return left;
    this.gatherSince = undefined;
    return 0;
  }

  /** Jobs whose processor is running. */
  private runningJobs(): number {
    let running = 0;
    for (const a of this.attempts.values()) if (a.processing) running++;
    return running;
  }

  /**
   * Slots for new jobs: `concurrency` counts running processors, so the next
   * claim overlaps the writing of finished outcomes; at most `concurrency`
   * more jobs may be waiting for their outcome to be written.
   */
  private freeSlots(running: number): number {
    const c = this.opts.concurrency;
    return Math.min(c - running, 2 * c - this.attempts.size);
  }

  private onIdle(): void {
    this.finisher?.idle();
    if (this.hadWork && this.attempts.size === 0) {
      this.hadWork = false;
      this.emit('drained');
    }
  }

  private process(claimed: ClaimedJob): void {
    let span: Span | undefined;
    const attempt = new Attempt(this, claimed, this.store as QueueStore, this.opts, {
      run: (job, signal) => this.execute(job as Job<DataType, ResultType, NameType>, signal),
      finish: (f) => this.writeOutcome(f, span),
      forced: () => this.forced,
      released: () => this.wakeClaimLoop(),
      trim: (kind, keep) => this.trimmer?.request(kind, keep),
      rateLimited: () => void this.holdForRateLimit().catch((err) => this.emitError(err)),
    });
    this.attempts.set(claimed.record.id, attempt);
    this.cancels?.claimed(claimed.record.id, claimed.token);
    this.tracing
      .process(attempt.job, (s) => {
        span = s;
        return attempt.run();
      })
      .catch((err) => this.emitError(err))
      .finally(() => {
        this.attempts.delete(claimed.record.id);
        // a job it held that waits again was left out of its idle look (by id): look again now
        if (attempt.mayWaitAgain) this.nudge();
        else {
          this.wakeClaimLoop();
          // its last job ended while it waits for work: the queue ran dry now, not at the idle poll
          if (this.waitingForWork && this.attempts.size === 0) this.onIdle();
        }
      });
  }

  /** Writes an attempt's outcome (batched by the Finisher), traced, and counted in the queue's metrics. */
  private async writeOutcome(f: Finish, span: Span | undefined): Promise<FinishResult> {
    const result = await this.tracing.finish(f, span, () => (this.finisher as Finisher).finish(f));
    const kind = f.outcome.kind;
    if (result.ok && (kind === 'completed' || kind === 'failed')) this.collector?.record(kind);
    // a retry's backoff: this worker promotes it when due, should the leader not
    if (result.ok && f.outcome.kind === 'retry' && f.outcome.due > 0) this.housekeeper?.noteDue(f.outcome.due);
    return result;
  }

  private async execute(job: Job<DataType, ResultType, NameType>, signal: AbortSignal): Promise<ResultType> {
    if (this.processorFn) return this.processorFn(job, job.token, signal);
    const attempt = this.attempts.get(job.id);
    try {
      return (await (this.pool as ThreadPool).run(
        job.toJSON(),
        job.token ?? '',
        signal,
        (progress, logs) => attempt?.absorb(progress, logs),
        (value) => this.onThreadProgress(job.id, attempt, value),
      )) as ResultType;
    } catch (err) {
      // the pool stops waiting for an aborted job (ending its thread when it has one of its own):
      // the job fails with the cancel's reason
      if (signal.aborted && typeof signal.reason === 'string') throw new Error(signal.reason);
      throw err;
    }
  }

  /** Live progress of a thread's run: published while its own attempt still runs, dropped after. */
  private onThreadProgress(jobId: string, attempt: Attempt | undefined, value: unknown): void {
    if (!attempt || this.attempts.get(jobId) !== attempt) return;
    void attempt.job.updateProgress(value as JobProgress).catch((e) => this.emitError(e));
  }

  /** Emits `error` when someone listens; otherwise a process warning (an unheard 'error' would crash). */
  emitError(err: unknown): void {
    if (this.closing && err instanceof SessionClosedError) return; // background work cut short by close()
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
    else process.emitWarning(e.message, { type: 'ZkqWorkerWarning', code: (e as { code?: string }).code });
  }

  /** Stops claiming on this worker (jobs in flight finish). */
  async pause(doNotWaitActive = false): Promise<void> {
    this.localPaused = true;
    this.emit('paused');
    if (doNotWaitActive) return;
    // a claim under way may still get jobs: as BullMQ's pause, wait for them too (an idle wait ends now)
    this.source?.poke();
    await this.claiming?.catch(() => undefined);
    await Promise.all([...this.attempts.values()].map((a) => a.done));
  }

  resume(): void {
    this.localPaused = false;
    this.emit('resumed');
    this.nudge();
  }

  /**
   * Stops claiming, lets jobs in flight finish and record their results,
   * then disconnects. `force` aborts them instead (their processors' signals
   * fire; their threads are terminated) and waits for no write; their claims
   * end with the session, so other workers run them again.
   *
   * Bounded when ZooKeeper is out of reach: once it has answered nothing for
   * `closeTimeout` ms (default 5000), the close goes on as a forced one and
   * drops the session without waiting; the claims of the jobs it aborted
   * lapse when ZooKeeper expires that session. `close(true)` waits at most
   * a second (for the server to confirm the session's end).
   */
  close(force = false): Promise<void> {
    if (force) {
      this.forced = true;
      this.quit.resolve();
    }
    if (this.closing) {
      if (force) for (const a of this.attempts.values()) a.abort();
      return this.closing;
    }
    this.emit('closing', 'closing');
    this.closing = (async () => {
      this.closeSignal.abort();
      this.started.reject(new ClosedError(`worker of '${this.name}'`)); // no-op once started
      this.nudge();
      if (force) for (const a of this.attempts.values()) a.abort();
      const answered = new AbortController();
      const closeTimeout = this.opts.closeTimeout ?? DEFAULT_CLOSE_TIMEOUT_MS;
      void untilSilent(() => this.session, closeTimeout, answered.signal).then(() => this.quit.resolve());
      const gaveUp = await Promise.race([this.drain().then(() => false), this.quit.promise.then(() => true)]);
      answered.abort();
      if (gaveUp) this.abandon();
      await this.pool?.close();
      this.sessionClosing = true;
      const wait = force ? Math.min(FORCED_SESSION_CLOSE_MS, closeTimeout) : gaveUp ? 0 : undefined;
      await this.session?.close({ timeout: wait });
      this.emit('closed');
    })();
    return this.closing;
  }

  /** What close() waits for while ZooKeeper answers: the claim loop, the jobs in flight, their writes. */
  private async drain(): Promise<void> {
    await this.running?.catch(() => undefined);
    this.source?.leaveLine();
    await Promise.all([...this.attempts.values()].map((a) => a.done));
    await this.collector?.close();
    this.cancels?.close();
    await this.renewer?.stop();
    this.trimmer?.stop();
    await this.housekeeper?.close().catch(() => undefined);
  }

  /**
   * close() stops waiting for ZooKeeper: the jobs still running are aborted
   * as by a forced close, and what runs in the background stops here; writes
   * under way fail once the session is closed.
   */
  private abandon(): void {
    this.forced = true;
    for (const a of this.attempts.values()) a.abort();
    this.source?.leaveLine();
    this.cancels?.close();
    void this.renewer?.stop();
    this.trimmer?.stop();
    void this.housekeeper?.close().catch(() => undefined);
  }
}

/** A promise with its settle functions; never an unhandled rejection on its own. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
