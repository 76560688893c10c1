/**
 * What every Queue is built on: its options checked, its connection (a
 * session at the queue's prefix, the queue's nodes made), its events, the
 * span of each operation, and close. Reads are in queue-getters.ts, control
 * in queue-control.ts, adds in queue.ts.
 */
import { EventEmitter } from 'node:events';
import {
  ClosedError,
  DEFAULT_PREFIX,
  InvalidArgumentError,
  type Job,
  type QueueOptions,
  type Session,
  SpanKind,
} from '@zkq/core';
import {
  CallOrder,
  openSession,
  QueueStore,
  type Span,
  trace,
  validateConnection,
  validateJobOptions,
  validatePrefix,
  validateQueueName,
  validateTelemetry,
} from '@zkq/core/internal';

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

export class QueueBase<DataType = any, ResultType = any, NameType extends string = string> extends EventEmitter<
  QueueListener<Job<DataType, ResultType, NameType>>
> {
  readonly name: string;
  readonly opts: QueueOptions;
  private readonly ready: Promise<{ session: Session; store: QueueStore }>;
  /** Pipelined adds join the group commit in call order. */
  protected readonly addOrder = new CallOrder();
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

  protected async store(): Promise<QueueStore> {
    if (this.closing) throw new ClosedError(`queue '${this.name}'`);
    return (await this.ready).store;
  }

  /** Runs `fn` in a span of the `telemetry` option (directly without it). */
  protected trace<T>(
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
