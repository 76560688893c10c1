/**
 * What every operation of one backend shares: the session, the queue's store,
 * the attempts this instance holds and the worker-side machinery (job source,
 * housekeeper), created on first use.
 */
import { hostname } from 'node:os';
import { type ConnectionOptions, NoNodeError, type Session } from '@zkq/core';
import {
  type ClaimedJob,
  DEFAULT_METRICS_DATA_POINTS,
  Finisher,
  Housekeeper,
  JobSource,
  MetricsCollector,
  openSession,
  prepareTrims,
  QueueStore,
  validateQueueName,
} from '@zkq/core/internal';
import type { KeepJobs, QueueBaseOptions, RateLimiterOptions } from 'bullmq';

/** zkq's connection options: where ZooKeeper is, how long a session lives, credentials, and the namespace. */
export interface ZooKeeperConnectionOptions extends ConnectionOptions {
  /**
   * The node queues live under, zkq's `prefix` (default `zkq`, so zkq's own
   * Queue, Worker and CLI see the same queues). BullMQ's `prefix` option is
   * for Redis keys and is ignored here, as BullMQ's PostgreSQL backend does.
   */
  namespace?: string;
}

/** The options a backend reads: BullMQ's base options, plus the worker's when a Worker owns it. */
export interface BackendOptions extends QueueBaseOptions<ZooKeeperConnectionOptions> {
  name?: string;
  lockDuration?: number;
  stalledInterval?: number;
  maxStalledCount?: number;
  removeOnComplete?: boolean | number | KeepJobs;
  removeOnFail?: boolean | number | KeepJobs;
  drainDelay?: number;
  concurrency?: number;
  /** A Worker's rate limiter: applies queue-wide, as on BullMQ (validated by the factory). */
  limiter?: RateLimiterOptions;
  /** BullMQ's Worker `metrics` option: per-minute counts of finished jobs, kept for `maxDataPoints` minutes. */
  metrics?: { maxDataPoints?: number };
}

/** An attempt this backend holds: the protocol's claim and BullMQ's lock token for it. */
export interface Held {
  job: ClaimedJob;
  lock: string;
  /** The latest progress reported (kept in the claim while the job runs). */
  progress?: unknown;
  /** A line was logged for it through this backend: its log node is there. */
  logged?: boolean;
}

/** The default lease of a claim, ms (BullMQ's lockDuration default). */
export const DEFAULT_LOCK_DURATION_MS = 30_000;
/** The default stalled-check interval, ms (BullMQ's). */
export const DEFAULT_STALLED_INTERVAL_MS = 30_000;
/** The default maxStalledCount (BullMQ's). */
export const DEFAULT_MAX_STALLED_COUNT = 1;

/** Stalled job ids kept for a Worker that has not asked for them. */
const STALLED_KEPT = 1000;

/** One session, shared by a backend and the siblings `forQueue` makes from it. */
export class SharedSession {
  private session: Promise<Session> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly connection: ZooKeeperConnectionOptions,
    readonly prefix: string,
  ) {}

  get(): Promise<Session> {
    if (this.closing) return Promise.reject(new Error('Connection is closed.'));
    this.session ??= openSession(this.connection, this.prefix);
    return this.session;
  }

  /**
   * The store of `queue` on this session: one per queue, shared by the
   * backends of one connection, and all of one family (a flow's transaction
   * spans queues: see QueueStore.sibling).
   */
  async store(queue: string): Promise<QueueStore> {
    const session = await this.get();
    if (!this.first || this.first.session !== session) this.first = new QueueStore(session, queue);
    return this.first.sibling(queue);
  }

  private first: QueueStore | undefined;

  /** The session if it was ever opened (for close). */
  opened(): Promise<Session> | undefined {
    return this.session;
  }

  /** Closes the session, waiting for the server at most `timeout` ms (see Session.close). */
  close(options: { timeout?: number } = {}): Promise<void> {
    this.closing ??= (async () => {
      const s = await this.session?.catch(() => undefined);
      await s?.close(options);
    })();
    return this.closing;
  }
}

export class BackendContext {
  private storePromise: Promise<QueueStore> | undefined;
  /** Attempts this instance claimed and has not finished, by job id. */
  readonly held = new Map<string, Held>();
  /** Ids of stalled jobs (revoked here, or claimed after their worker died) BullMQ has not asked for yet. */
  private readonly stalledIds: string[] = [];
  private jobSource: JobSource | undefined;
  private finisherInstance: Finisher | undefined;
  private metrics: MetricsCollector | undefined;
  private housekeeper: Housekeeper | undefined;
  /** Its start went through (one that failed is made again by the next call). */
  private housekeeperStarted = false;
  /** The Worker's registration is kept up across sessions (registerWorker). */
  private registered = false;
  private housekeeping: Promise<void> | undefined;
  private pausedFlag: Promise<boolean> | undefined;
  /** The pause flag as last read; true from a change until it is read again. */
  private pausedNow = false;
  /** The version of `meta` the flag was last read unset at (claims check it); undefined while paused or stale. */
  private unpausedAt: number | undefined;
  /** This backend's id among the queue's workers (membership, election). */
  readonly workerId: string;
  /** The name its attempts carry (`processedBy`): BullMQ's Worker `name`, else its id. */
  readonly claimOwner: string;

  constructor(
    readonly name: string,
    readonly opts: BackendOptions,
    readonly shared: SharedSession,
    /** Told about background failures (housekeeping, watches). */
    readonly onError: (err: unknown) => void,
  ) {
    // a FlowProducer's backend is bound to no queue (its siblings from forQueue are)
    if (name !== '') validateQueueName(name);
    this.workerId = `${opts.name ?? 'bullmq'}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    this.claimOwner = opts.name ?? this.workerId;
  }

  get prefix(): string {
    return this.shared.prefix;
  }

  get lockDuration(): number {
    return this.opts.lockDuration ?? DEFAULT_LOCK_DURATION_MS;
  }

  get maxStalledCount(): number {
    return this.opts.maxStalledCount ?? DEFAULT_MAX_STALLED_COUNT;
  }

  /** Remembers a stalled job for BullMQ's next stalled check (bounded: a Worker that never checks keeps the newest). */
  noteStalled(id: string): void {
    this.stalledIds.push(id);
    if (this.stalledIds.length > STALLED_KEPT) this.stalledIds.shift();
  }

  /** The stalled jobs noted since the last call. */
  takeStalled(): string[] {
    return this.stalledIds.splice(0);
  }

  /** Counts a finished job in the queue's metrics, when the Worker has the `metrics` option. */
  async countFinished(kind: 'completed' | 'failed', ts: number): Promise<void> {
    if (!this.opts.metrics) return;
    const max = this.opts.metrics.maxDataPoints ?? DEFAULT_METRICS_DATA_POINTS;
    this.metrics ??= new MetricsCollector(await this.store(), max, this.onError);
    this.metrics.record(kind, ts);
  }

  /** Finishes of overlapping calls share transactions (a Worker at concurrency N). */
  async finisher(): Promise<Finisher> {
    const store = await this.store();
    this.finisherInstance ??= new Finisher(store, this.onError);
    return this.finisherInstance;
  }

  /** The queue's store, its directories created on first use. */
  store(): Promise<QueueStore> {
    if (this.name === '') return Promise.reject(new Error('this backend is bound to no queue; use forQueue(name)'));
    this.storePromise ??= (async () => {
      const store = await this.shared.store(this.name);
      await store.init();
      return store;
    })().catch((err) => {
      this.storePromise = undefined;
      throw err;
    });
    return this.storePromise;
  }

  /** Whether the queue is paused: read once, then kept current by a watch. */
  async paused(): Promise<boolean> {
    this.pausedFlag ??= this.readPaused();
    return this.pausedFlag.catch((err) => {
      this.pausedFlag = undefined;
      throw err;
    });
  }

  private async readPaused(): Promise<boolean> {
    const store = await this.store();
    const changed = () => {
      // re-read on the next look; a resumed (or re-created) queue wakes the idle wait. Held until
      // that read returns: the flag last read is stale, also while another caller reads it again
      this.pausedNow = true;
      this.unpausedAt = undefined;
      this.pausedFlag = undefined;
      this.jobSource?.poke();
    };
    try {
      const { paused, version } = await store.pauseState(changed);
      this.pausedNow = paused;
      this.unpausedAt = paused ? undefined : version;
      return paused;
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      // the queue was obliterated: nothing to claim (as on Redis) until it is made again
      if (!(await store.session.exists(store.layout.meta, { watch: changed }))) {
        this.pausedNow = true;
        return true;
      }
      this.pausedFlag = undefined;
      return this.readPaused();
    }
  }

  /** The job source of a Worker's backend (claims, the idle line). */
  async source(): Promise<JobSource> {
    const store = await this.store();
    // what the first finishes trim is known before they come (they then read nothing)
    if (!this.jobSource) void prepareTrims(store);
    this.jobSource ??= new JobSource(store, () => this.held.keys(), {
      workerId: this.claimOwner,
      lockDuration: this.lockDuration,
      idlePollMs: (this.opts.drainDelay ?? 5) * 1000,
      onWarning: this.onError,
      limiter: this.opts.limiter,
      // asked right before a claim is sent: a pause whose watch fired meanwhile (it is not read
      // again yet) holds the claim back, as the pause flag itself does
      held: () => this.pausedFlag === undefined || this.pausedNow,
      // and the claim checks the flag at that version: a pause committed while it is on its way fails it
      pauseVersion: () => this.unpausedAt,
    });
    return this.jobSource;
  }

  /** The job source when one was made (no session opened to find out). */
  existingSource(): JobSource | undefined {
    return this.jobSource;
  }

  /**
   * Starts this process's housekeeping: it promotes due delayed jobs and
   * heals schedulers, and stands for the queue's election (stale claims,
   * receipts); a Worker's backend runs what zkq's own workers run, so a
   * BullMQ-only deployment needs nothing else.
   */
  startHousekeeping(): Promise<void> {
    if (!this.housekeeping) {
      const starting = this.housekeep();
      this.housekeeping = starting;
      starting.catch(() => {
        if (this.housekeeping === starting) this.housekeeping = undefined; // tried again by the next claim
      });
    }
    return this.housekeeping;
  }

  /**
   * One call at a time (startHousekeeping). A start that failed (the session
   * suspended or lost meanwhile) is made again by the next call, on the same
   * housekeeper: its election then first removes a node the failed join may
   * have left in line (a create applied, its reply lost), which a new one
   * would wait behind for the session's life.
   */
  private async housekeep(): Promise<void> {
    const store = await this.store();
    if (!this.housekeeper) {
      const hk = new Housekeeper(store, this.workerId, this.opts.stalledInterval ?? DEFAULT_STALLED_INTERVAL_MS);
      this.housekeeper = hk; // set while it starts, so that close() stops it
      hk.on('stalled', (id) => this.noteStalled(id));
      hk.on('error', this.onError);
    }
    if (!this.housekeeperStarted) {
      await this.housekeeper.start();
      this.housekeeperStarted = true;
    }
    await this.registerWorker();
  }

  /**
   * Registers the Worker (`workers/<id>`, EPHEMERAL), again on every new
   * session: BullMQ lists a Worker from its creation (its named connection),
   * before it runs, while its housekeeping waits for its run.
   */
  async registerWorker(): Promise<void> {
    const store = await this.store();
    if (!this.registered) {
      this.registered = true;
      store.session.onNewSession(() => this.register(store));
    }
    await this.register(store);
  }

  /** A due time (ZooKeeper's clock) this backend wrote: its housekeeper promotes it then, should the leader not. */
  noteDue(due: number): void {
    this.housekeeper?.noteDue(due);
  }

  /** A Worker's membership (`workers/<id>`): BullMQ's getWorkers lists it by its name. */
  private register(store: QueueStore): Promise<void> {
    return store.registerWorker(this.workerId, {
      id: this.workerId,
      ...(this.opts.name ? { name: this.opts.name } : {}),
      host: hostname(),
      pid: process.pid,
      concurrency: this.opts.concurrency ?? 1,
      startedAt: Date.now(),
    });
  }

  async close(): Promise<void> {
    await this.metrics?.close(); // writes what was counted
    this.jobSource?.leaveLine();
    this.jobSource?.poke();
    await this.housekeeper?.close();
  }
}
