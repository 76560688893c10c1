/**
 * What a ZooKeeperQueueBackend is built on: its context (the queue, the
 * shared session), its start (housekeeping for a worker's, the event stream
 * for a listener's), close, and its identity as BullMQ names it (keys,
 * qualified name). Reads are in backend-reads.ts, edits in
 * backend-control.ts, adding and running jobs in backend.ts.
 */
import { EventEmitter } from 'node:events';
import type { Session } from '@zkq/core';
import type { Trimmer as TrimmerType } from '@zkq/core/internal';
import { CallOrder, Trimmer, untilSilent } from '@zkq/core/internal';
import type { KeysMap } from 'bullmq';
import * as attempts from './attempts.js';
import type { BackendContext } from './context.js';
import * as events from './events.js';

/** Longest close() of a backend that ZooKeeper does not answer, ms (zkq's Worker default closeTimeout). */
const CLOSE_TIMEOUT_MS = 5000;
/** Longest wait of close(true) for the server to confirm the session's end, ms. */
const FORCED_SESSION_CLOSE_MS = 1000;

export class BackendBase extends EventEmitter {
  /** Seconds: the smallest wait BullMQ's Worker asks for (watches have no rounding). */
  readonly minimumBlockTimeout = 0.001;
  /** Seconds: a wait ends by a watch, so an idle worker may wait long between polls. */
  readonly maximumBlockTimeout = 60;
  private closingPromise: Promise<void> | undefined;
  protected readonly claimer: attempts.Claimer;
  private trimmerPromise: Promise<TrimmerType> | undefined;
  private readonly ready: Promise<void>;
  /** Pipelined adds are stored in call order, as on Redis (see CallOrder). */
  protected readonly addOrder = new CallOrder();

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
    // retries are due on ZooKeeper's clock: know its offset before the first. Housekeeping starts
    // with the Worker's run (its first claim or stalled check), as BullMQ's maintenance does: a
    // Worker whose constructor threw after making its backend never runs, and must leave nothing
    // running (an election it stood for would write the queue again while it is obliterated)
    if (this.role.worker) {
      await store.clock.now();
      // listed by getWorkers once ready, as BullMQ lists a Worker's connection; a registration that failed
      // (the link lost) does not keep the Worker from running: its housekeeping registers it again
      await this.ctx.registerWorker().catch((err: unknown) => this.emit('error', err));
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

  protected trimmer(): Promise<TrimmerType> {
    this.trimmerPromise ??= this.ctx.store().then((store) => new Trimmer(store, this.ctx.onError));
    return this.trimmerPromise;
  }
}
