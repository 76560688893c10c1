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
 * `waitUntilReady()` may be missed; `waitJobFinished` also checks the job's
 * state, so it never depends on that.
 */

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  DEFAULT_PREFIX,
  InvalidArgumentError,
  type JobProgress,
  NoNodeError,
  openSession,
  type QueueBaseOptions,
  type QueueEventRecord,
  QueueStore,
  type Session,
  sequenceOf,
  TimeoutError,
  validateConnection,
  validateQueueName,
} from '@zkq/core';

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
  stalled: [args: { jobId: string }, ...Id];
  removed: [args: { jobId: string; prev: string }, ...Id];
  cleaned: [args: { count: string }, ...Id];
  paused: [args: object, ...Id];
  resumed: [args: object, ...Id];
  drained: Id;
  error: [error: Error];
}

/** How often a `waitJobFinished` re-reads the job's state besides listening, ms. */
const FINISHED_POLL_MS = 500;

export class QueueEvents extends EventEmitter<QueueEventsListener> {
  readonly name: string;
  private readonly id = randomBytes(6).toString('hex');
  private session: Session | undefined;
  private store: QueueStore | undefined;
  private cursor = -1;
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(
    name: string,
    readonly opts: QueueEventsOptions,
  ) {
    super();
    validateQueueName(name);
    if (!opts || typeof opts !== 'object') throw new InvalidArgumentError('QueueEvents options are required', 'opts');
    validateConnection(opts.connection);
    this.name = name;
    if (opts.autorun !== false) void this.run().catch((err) => this.fail(err));
  }

  /** Resolves once registered as a listener. */
  waitUntilReady(): Promise<void> {
    this.ready ??= this.connect();
    return this.ready;
  }

  /** Follows the event log until closed. */
  run(): Promise<void> {
    this.running ??= this.waitUntilReady().then(() => this.follow());
    return this.running;
  }

  private async connect(): Promise<void> {
    const session = await openSession(this.opts.connection, this.opts.prefix ?? DEFAULT_PREFIX);
    this.session = session;
    const store = new QueueStore(session, this.name);
    await store.init();
    this.store = store;
    if (this.opts.lastEventId !== '0') {
      const names = await session.getChildren(store.layout.eventLog);
      this.cursor = names.reduce((max, n) => Math.max(max, sequenceOf(n)), -1);
    }
    await this.register();
    session.onNewSession(() => this.register());
  }

  private async register(): Promise<void> {
    const { session, layout } = this.store as QueueStore;
    await session.create(`${layout.eventListeners}/${this.id}`, undefined, 'ephemeral').catch(() => undefined);
  }

  private readonly onLogChange = (): void => {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  private async follow(): Promise<void> {
    const { session, layout } = this.store as QueueStore;
    while (!this.closed) {
      const woken = new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      let names: string[];
      try {
        names = await session.getChildren(layout.eventLog, { watch: this.onLogChange });
      } catch (err) {
        if (this.closed) return;
        throw err;
      }
      const fresh = names.filter((n) => sequenceOf(n) > this.cursor).sort((a, b) => sequenceOf(a) - sequenceOf(b));
      for (const name of fresh) {
        await this.deliver(`${layout.eventLog}/${name}`, sequenceOf(name));
        this.cursor = sequenceOf(name);
      }
      if (fresh.length === 0) await woken;
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
   * Resolves with the job's return value once it completes, rejects with an
   * Error carrying its failure reason once it fails, or with TimeoutError
   * after `ttl` ms. Used by `job.waitUntilFinished(queueEvents)`.
   */
  async waitJobFinished(jobId: string, ttl?: number): Promise<unknown> {
    await this.waitUntilReady();
    const store = this.store as QueueStore;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (fn: () => void) => {
        clearTimeout(timer);
        clearInterval(poll);
        this.off('completed', onCompleted);
        this.off('failed', onFailed);
        fn();
      };
      const onCompleted = (a: { jobId: string; returnvalue: unknown }) => {
        if (a.jobId === jobId) void check(); // read the stored value: events may carry a truncated one
      };
      const onFailed = (a: { jobId: string; failedReason: string }) => {
        if (a.jobId === jobId) finish(() => reject(new Error(a.failedReason)));
      };
      const check = async () => {
        const stored = await store.getJob(jobId).catch(() => undefined);
        const claimed = await store.getClaim(jobId).catch(() => undefined);
        if (stored?.record.state === 'completed' && !claimed) finish(() => resolve(stored.record.returnvalue));
        else if (stored?.record.state === 'failed' && !claimed) {
          finish(() => reject(new Error(stored.record.failedReason ?? 'failed')));
        }
      };
      this.on('completed', onCompleted);
      this.on('failed', onFailed);
      const poll = setInterval(() => void check(), FINISHED_POLL_MS);
      if (ttl !== undefined) {
        timer = setTimeout(() => finish(() => reject(new TimeoutError(`waiting for job ${jobId}`, ttl))), ttl);
      }
      void check();
    });
  }

  private fail(err: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(String(err)));
  }

  /** Stops following and unregisters. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onLogChange();
    await this.ready?.catch(() => undefined);
    await this.session?.close();
  }
}
