/**
 * What a Worker is made of and how it starts: its options checked, its
 * processor (a function, or a file run on a thread pool), its connection and
 * the parts it drives (JobSource, Finisher, LeaseRenewer, Trimmer, metrics,
 * cancel requests, housekeeping), its registration and the queue's pause
 * flag it follows. The claim loop is in worker-claims.ts; run, pause and
 * close in worker.ts.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import {
  type Barrier,
  ClosedError,
  DEFAULT_PREFIX,
  InvalidArgumentError,
  type Job,
  type JobProgress,
  NoNodeError,
  type Session,
  SessionClosedError,
} from '@zkq/core';
import {
  CancelWatch,
  DEFAULT_METRICS_DATA_POINTS,
  Finisher,
  Housekeeper,
  JobSource,
  MetricsCollector,
  openSession,
  type PauseState,
  prepareTrims,
  QueueStore,
  Trimmer,
  validatePrefix,
  validateQueueName,
} from '@zkq/core/internal';
import type { Attempt } from './attempt.js';
import { setWorkerStore } from './internals.js';
import { LeaseRenewer } from './lease-renewer.js';
import {
  DEFAULT_DRAIN_DELAY_S,
  DEFAULT_LOCK_DURATION_MS,
  DEFAULT_MAX_STALLED_COUNT,
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
  /**
   * An attempt failed (retried or for good). `error` is what the processor threw (inline: the
   * thrown object, a value that is no Error as an Error of its text; from a thread: a
   * `ProcessorThreadError` with its name, message, stack and `code`), or an Error of the reason
   * zkq failed the job with (stalled too often, a failure too large to store).
   */
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

export class WorkerBase<DataType = any, ResultType = any, NameType extends string = string> extends EventEmitter<
  WorkerListener<DataType, ResultType, NameType>
> {
  readonly name: string;
  readonly id: string;
  readonly opts: Required<Pick<WorkerOptions, 'concurrency' | 'lockDuration' | 'maxStalledCount'>> & WorkerOptions;
  protected readonly processorFn: Processor<DataType, ResultType, NameType> | undefined;
  protected readonly pool: ThreadPool | undefined;
  protected readonly attempts = new Map<string, Attempt>();
  protected session: Session | undefined;
  protected store: QueueStore | undefined;
  protected source: JobSource | undefined;
  protected finisher: Finisher | undefined;
  protected trimmer: Trimmer | undefined;
  protected renewer: LeaseRenewer | undefined;
  protected housekeeper: Housekeeper | undefined;
  protected barrier: Barrier | undefined;
  protected collector: MetricsCollector | undefined;
  protected cancels: CancelWatch | undefined;
  protected readonly tracing: WorkerTracing;
  /** Settles when start-up is done (connected, registered) or has failed. */
  protected readonly started = deferred();
  /** Fires on close: ends waits that would otherwise outlive the worker (the barrier). */
  protected readonly closeSignal = new AbortController();
  protected running: Promise<void> | undefined;
  protected closing: Promise<void> | undefined;
  protected forced = false;
  /** Settles when close() stops waiting for ZooKeeper (forced, or no answer for `closeTimeout`). */
  protected readonly quit = deferred();
  /** close() has reached the session: one opened after this is closed at once. */
  protected sessionClosing = false;
  /**
   * The queue's pause flag as last read, with the version of `meta` it was
   * read at (claims check it); undefined from a change until it is read
   * again: the worker holds meanwhile.
   */
  private pauseState: PauseState | undefined;
  protected localPaused = false;
  protected wakeLoop: (() => void) | undefined;
  /** The claim under way and the start of what it got: pause() waits for it. */
  protected claiming: Promise<void> | undefined;
  protected hadWork = false;
  /** The last take found nothing to claim, and nothing was claimed since: the loop waits for work. */
  protected waitingForWork = false;
  /** When the first slot freed that a claim is still waiting to fill with others (see gatherFor). */
  protected gatherSince: number | undefined;
  /** After a RateLimitError: no claim before this time (performance.now()). */
  protected limitedUntil = 0;

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

  protected async start(): Promise<void> {
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
   * again, the worker holds: the flag and version it knows are stale. A
   * queue obliterated meanwhile has no flag: the worker holds, watching for
   * it to be made again.
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
    try {
      this.pauseState = await store.pauseState(rearm);
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      // made again between the two reads: read it (the exists-watch set meanwhile fires at most once)
      if (await store.session.exists(store.layout.meta, { watch: rearm })) return this.watchPause();
      return;
    }
    this.nudge();
  }

  /** Paused, or the flag changed and is not read again yet. */
  protected queuePaused(): boolean {
    return this.pauseState?.paused !== false;
  }

  /** Wakes the claim loop and ends its idle wait for work (pause changed, reconnected, resumed, closing). */
  protected nudge(): void {
    this.wakeClaimLoop();
    this.source?.poke();
  }

  /**
   * Wakes the claim loop where it waits for a free slot or for a hold to end.
   * A wait for work goes on: a slot freed brings no work, and ending that
   * wait would cost a look at the head and at the line of idle workers.
   */
  protected wakeClaimLoop(): void {
    const w = this.wakeLoop;
    this.wakeLoop = undefined;
    w?.();
  }

  /** Emits `error` when someone listens; otherwise a process warning (an unheard 'error' would crash). */
  emitError(err: unknown): void {
    if (this.closing && err instanceof SessionClosedError) return; // background work cut short by close()
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
    else process.emitWarning(e.message, { type: 'ZkqWorkerWarning', code: (e as { code?: string }).code });
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
