/**
 * QueueEvents: a queue's events, from every process (BullMQ's QueueEvents).
 *
 * ```ts
 * const events = new QueueEvents('emails', { connection });
 * events.on('completed', ({ jobId, returnvalue }) => console.log(jobId, returnvalue));
 * ```
 *
 * Registering makes writers log events (see @zkq/core events.ts); this class
 * follows the log in order with a children watch. Writers learn of a new
 * listener through a watch, so events of the first few milliseconds after
 * `waitUntilReady()` may be missed; `waitJobFinished` also reads the job's
 * record, so a job finished before it was called is found all the same.
 *
 * The registration and the log watch are each kept by a `WatchLoop`: after a
 * connection loss, an outage of any length or a session expiry, the listener
 * node is created again and following resumes where it stopped (events
 * trimmed from the log meanwhile are missed). Each failure emits `error`
 * (when someone listens) and is retried. A log deleted and made again (an
 * obliterated queue in use again) numbers its nodes from 0: it is followed
 * from its start.
 */

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  ClosedError,
  DEFAULT_PREFIX,
  InvalidArgumentError,
  type JobProgress,
  NoNodeError,
  type QueueBaseOptions,
  type Session,
  type Watcher,
  WatchLoop,
} from '@zkq/core';
import {
  keepListenerRegistered,
  openSession,
  type QueueEventRecord,
  QueueStore,
  sequenceOf,
  validateConnection,
  validateJobId,
  validatePrefix,
  validateQueueName,
} from '@zkq/core/internal';
import { FinishedWaiters } from './finished-waiters.js';

export interface QueueEventsOptions extends QueueBaseOptions {
  /** Start following at once. Default true. */
  autorun?: boolean;
  /** `'$'` (default): only events from now on; `'0'`: every event still in the log. */
  lastEventId?: string;
}

type Id = [id: string];
/** Typed events (BullMQ's QueueEventsListener); `id` is `<log seq>-<index>`. */
export interface QueueEventsListener {
  added: [args: { jobId: string; name: string }, ...Id];
  waiting: [args: { jobId: string; prev?: string }, ...Id];
  active: [args: { jobId: string; prev?: string }, ...Id];
  progress: [args: { jobId: string; data: JobProgress }, ...Id];
  completed: [args: { jobId: string; returnvalue: any; prev?: string }, ...Id];
  failed: [args: { jobId: string; failedReason: string; prev?: string }, ...Id];
  delayed: [args: { jobId: string; delay: number }, ...Id];
  /** A parent waits for its children (flows): added so, or parked by its processor (`prev: 'active'`). */
  'waiting-children': [args: { jobId: string; prev?: string }, ...Id];
  stalled: [args: { jobId: string }, ...Id];
  removed: [args: { jobId: string; prev: string }, ...Id];
  /** An add was deduplicated: `jobId` is the job kept, `deduplicatedJobId` the one not added. */
  deduplicated: [args: { jobId: string; deduplicationId: string; deduplicatedJobId: string }, ...Id];
  cleaned: [args: { count: string }, ...Id];
  paused: [args: object, ...Id];
  resumed: [args: object, ...Id];
  drained: Id;
  error: [error: Error];
}

export class QueueEvents extends EventEmitter<QueueEventsListener> {
  readonly name: string;
  private readonly id = randomBytes(6).toString('hex');
  private session: Session | undefined;
  private store: QueueStore | undefined;
  /** Sequence number of the last log node delivered. */
  private cursor = -1;
  private registration: WatchLoop<void> | undefined;
  private follower: WatchLoop<LogListing> | undefined;
  private readonly caughtUp = new Set<{ seq: number; resolve: () => void }>();
  private readonly waiters: FinishedWaiters;
  private running: Promise<void> | undefined;
  private ready: Promise<void> | undefined;
  private closed = false;
  /** Fires on close: a connect under way gives up. */
  private readonly closeSignal = new AbortController();
  private onClosed!: () => void;
  private readonly closedSignal = new Promise<void>((resolve) => {
    this.onClosed = resolve;
  });

  constructor(
    name: string,
    readonly opts: QueueEventsOptions,
  ) {
    super();
    validateQueueName(name);
    if (!opts || typeof opts !== 'object') throw new InvalidArgumentError('QueueEvents options are required', 'opts');
    validateConnection(opts.connection);
    validatePrefix(opts.prefix ?? DEFAULT_PREFIX);
    this.name = name;
    this.waiters = new FinishedWaiters(this, () => this.catchUp());
    if (opts.autorun !== false) void this.run().catch((err) => this.fail(err));
  }

  /** Resolves once registered as a listener. */
  waitUntilReady(): Promise<void> {
    this.ready ??= this.connect();
    return this.ready;
  }

  /** Follows the event log until closed; resolves on close. */
  run(): Promise<void> {
    this.running ??= this.waitUntilReady().then(() => this.follow());
    return this.running;
  }

  private async connect(): Promise<void> {
    const session = await openSession(
      this.opts.connection,
      this.opts.prefix ?? DEFAULT_PREFIX,
      this.closeSignal.signal,
    );
    this.session = session;
    if (this.closed) throw new ClosedError(`QueueEvents '${this.name}'`); // close() closes the session
    const store = new QueueStore(session, this.name);
    await store.init();
    this.store = store;
    if (this.opts.lastEventId !== '0') {
      const names = await session.getChildren(store.layout.eventLog);
      this.cursor = names.reduce((max, n) => Math.max(max, sequenceOf(n)), -1);
    }
    const registration = new WatchLoop<void>(session, {
      read: (watch) => {
        const { session, layout } = this.store as QueueStore;
        return keepListenerRegistered(session, layout, this.id, watch);
      },
      onRead: () => undefined,
      onError: (err) => this.fail(err),
    });
    this.registration = registration;
    try {
      await registration.start();
    } catch (err) {
      registration.close();
      throw err;
    }
  }

  private async follow(): Promise<void> {
    if (this.closed) return;
    const { session, layout } = this.store as QueueStore;
    const follower = new WatchLoop<LogListing>(session, {
      read: (watch) => listLog(session, layout.eventLog, watch),
      onRead: (listing) => this.deliverNew(listing),
      onError: (err) => this.fail(err),
    });
    this.follower = follower;
    await follower.start().catch((err) => this.fail(err)); // retried by the loop
    await this.closedSignal;
  }

  private async deliverNew({ names, gone }: LogListing): Promise<void> {
    const { layout } = this.store as QueueStore;
    // trimming never removes the newest node: numbers that went back, or a log seen missing, mean a
    // new log (the queue obliterated and made again), followed from its start
    const newest = names.reduce((max, n) => Math.max(max, sequenceOf(n)), -1);
    if (gone || newest < this.cursor) {
      this.cursor = -1;
      for (const w of this.caughtUp) w.resolve(); // what they waited for went with the old log
    }
    const fresh = names.filter((n) => sequenceOf(n) > this.cursor).sort((a, b) => sequenceOf(a) - sequenceOf(b));
    for (const name of fresh) {
      if (this.closed) return;
      await this.deliver(`${layout.eventLog}/${name}`, sequenceOf(name));
      this.cursor = sequenceOf(name);
      for (const w of this.caughtUp) if (w.seq <= this.cursor) w.resolve();
    }
  }

  private async deliver(path: string, seq: number): Promise<void> {
    let events: QueueEventRecord[];
    try {
      events = JSON.parse((await (this.session as Session).getData(path)).data.toString()) as QueueEventRecord[];
    } catch (err) {
      if (err instanceof NoNodeError) return; // trimmed before we read it
      throw err;
    }
    events.forEach((e, i) => {
      const { event, ts: _ts, ...args } = e;
      const id = `${seq}-${i}`;
      if (event === 'drained') this.emit('drained', id);
      else (this.emit as (name: string, ...a: unknown[]) => boolean)(event, args, id);
    });
  }

  /**
   * Resolves once every event logged before the call has been delivered
   * (or at close). The follower must be running.
   */
  private async catchUp(): Promise<void> {
    const { session, layout } = this.store as QueueStore;
    const names = await session.getChildren(layout.eventLog);
    const last = names.reduce((max, n) => Math.max(max, sequenceOf(n)), -1);
    if (this.closed || last <= this.cursor) return;
    await new Promise<void>((resolve) => {
      const entry = {
        seq: last,
        resolve: () => {
          this.caughtUp.delete(entry);
          resolve();
        },
      };
      this.caughtUp.add(entry);
      this.follower?.refresh();
    });
  }

  /**
   * Resolves with the job's return value once it completes, rejects with an
   * Error carrying its failure reason once it fails, with JobNotFoundError
   * when no such job exists (also a job removed on completion before this
   * was called), with TimeoutError after `ttl` ms, or with ClosedError on
   * `close()`. Starts following the log if `autorun` was off. Used by
   * `job.waitUntilFinished(queueEvents)`.
   */
  async waitJobFinished(jobId: string, ttl?: number): Promise<unknown> {
    validateJobId(jobId);
    if (ttl !== undefined && !(typeof ttl === 'number' && ttl >= 0)) {
      throw new InvalidArgumentError('ttl must be a number of ms >= 0', 'ttl');
    }
    if (this.closed) throw new ClosedError(`QueueEvents '${this.name}'`);
    void this.run().catch((err) => this.fail(err));
    await this.waitUntilReady();
    if (this.closed) throw new ClosedError(`QueueEvents '${this.name}'`);
    return this.waiters.wait(this.store as QueueStore, jobId, ttl);
  }

  private fail(err: unknown): void {
    if (this.closed) return;
    if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(String(err)));
  }

  /** Stops following and unregisters; pending `waitJobFinished` calls reject with ClosedError. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.waiters.closeAll(new ClosedError(`QueueEvents '${this.name}'`));
    this.follower?.close();
    this.registration?.close();
    for (const w of [...this.caughtUp]) w.resolve();
    this.onClosed();
    this.closeSignal.abort(); // a connect under way gives up
    // connected: closing the session ends reads still under way
    if (!this.session) await this.ready?.catch(() => undefined);
    await this.session?.close();
  }
}

/** A listing of the event log, and whether the log was seen missing (obliterated) meanwhile. */
interface LogListing {
  names: string[];
  gone: boolean;
}

/** The log's node names, watched; a missing log is watched for its creation. */
async function listLog(session: Session, log: string, watch: Watcher): Promise<LogListing> {
  try {
    return { names: await session.getChildren(log, { watch }), gone: false };
  } catch (err) {
    if (!(err instanceof NoNodeError)) throw err;
    if (!(await session.exists(log, { watch }))) return { names: [], gone: true };
    return { names: await session.getChildren(log, { watch }), gone: true }; // made again meanwhile
  }
}
