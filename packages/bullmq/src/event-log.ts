/**
 * EventLog: what one backend knows of its queue's event log, kept current by
 * watches, and its registration as a listener.
 *
 * Writers log events (`events/log/e-<seq>`, a JSON array per transaction)
 * only while some `events/listeners/<id>` exists. A QueueEvents backend keeps
 * its EPHEMERAL listener node present with a WatchLoop: after a session
 * expiry it is created again. When the queue is obliterated the node is not
 * made again by force (that would re-create the queue's root under a running
 * obliterate); the loop waits for the queue to be made again, then registers.
 *
 * The log's listing is followed with a children watch (a WatchLoop too:
 * re-armed after any failure, re-read after a reconnect), so a read that
 * finds nothing new waits for a change, not for a poll. A log deleted and
 * made again (an obliterated queue in use again) numbers its nodes from 0:
 * each such new log is a new `generation`, and a position in an older one
 * means the start of the new one.
 */
import { randomBytes } from 'node:crypto';
import { NoNodeError, type Watcher, WatchLoop } from '@zkq/core';
import { keepListenerRegistered, type QueueStore, sequenceOf } from '@zkq/core/internal';
import type { BackendContext } from './context.js';

/** A log node: its name and its sequence number. */
export interface LogNode {
  name: string;
  seq: number;
}

/** A position in the log: after event `index` (1-based) of node `seq`; Infinity: after the whole node. */
export interface Cursor {
  seq: number;
  index: number;
}

/** A listing of the log, and whether the log was seen missing meanwhile. */
interface Listing {
  names: string[];
  gone: boolean;
}

/** A position, its id, and the log generation it belongs to. */
export interface Mark {
  id: string;
  cursor: Cursor;
  generation: number;
}

export class EventLog {
  /** Log nodes known from the latest listing, oldest first. */
  nodes: LogNode[] = [];
  /** Counts listings: a reader that saw version v waits for a later one. */
  version = 0;
  /** Counts logs: a new one after the log was deleted (its sequence numbers start again). */
  generation = 0;
  /** Where a read of `$` (only what is new) starts; set once, then moved on by `$` reads. */
  dollar: Mark | undefined;
  /** The last entry a read returned: the id BullMQ passes to the next read. */
  last: Mark | undefined;
  /** The newest sequence number listed in this generation. */
  private highest = -1;
  private closedFlag = false;
  private following: Promise<void> | undefined;
  private follower: WatchLoop<Listing> | undefined;
  private registration: WatchLoop<void> | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly id = randomBytes(6).toString('hex');

  constructor(private readonly ctx: BackendContext) {}

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Starts following the log (once); resolves after the first listing. */
  follow(): Promise<void> {
    this.following ??= (async () => {
      const store = await this.ctx.store();
      const loop = new WatchLoop<Listing>(store.session, {
        read: (watch) => listLog(store, watch),
        onRead: (listing) => this.onListing(listing),
        onError: this.ctx.onError,
      });
      this.follower = loop;
      if (this.closedFlag) loop.close();
      else await loop.start();
    })().catch((err) => {
      this.follower?.close();
      this.following = undefined;
      throw err;
    });
    return this.following;
  }

  /** The end of the log as last listed. */
  tail(): Mark {
    const seq = this.nodes.at(-1)?.seq ?? -1;
    return { id: `${seq}-0`, cursor: { seq, index: Number.POSITIVE_INFINITY }, generation: this.generation };
  }

  /**
   * Registers as a listener, so writers log. The position of `$` is taken
   * from a listing made before the registration: whatever a writer logs once
   * it sees the listener comes after it.
   */
  async register(): Promise<void> {
    await this.follow();
    this.dollar ??= this.tail();
    const store = await this.ctx.store();
    const loop = new WatchLoop<void>(store.session, {
      read: (watch) => keepListenerRegistered(store.session, store.layout, this.id, watch),
      onRead: () => undefined,
      onError: this.ctx.onError,
    });
    this.registration = loop;
    if (this.closedFlag) return loop.close();
    await loop.start();
  }

  /** Resolves on the first listing after `version`, on close, or after `ms` (no limit when not finite). */
  changed(version: number, ms: number): Promise<void> {
    if (this.version !== version || this.closedFlag) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, Math.max(0, ms)) : undefined;
      this.waiters.add(done);
    });
  }

  /** Stops following and unregisters; waiting reads return. */
  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.follower?.close();
    this.registration?.close();
    for (const wake of [...this.waiters]) wake();
    if (!this.registration) return;
    // Writers stop logging at once rather than when the session ends.
    const store = await this.ctx.store().catch(() => undefined);
    if (store && !store.session.closed) {
      await store.session.delete(`${store.layout.eventListeners}/${this.id}`).catch(() => undefined);
    }
  }

  private onListing({ names, gone }: Listing): void {
    this.nodes = names
      .filter((n) => n.startsWith('e-'))
      .map((name) => ({ name, seq: sequenceOf(name) }))
      .sort((a, b) => a.seq - b.seq);
    const newest = this.nodes.at(-1)?.seq ?? -1;
    // Trimming never removes the newest node: numbers that went back mean a new log.
    if (gone || newest < this.highest) {
      if (this.highest >= 0) this.generation++;
      this.highest = -1;
    }
    this.highest = Math.max(this.highest, newest);
    this.version++;
    for (const wake of [...this.waiters]) wake();
  }
}

/** The log's node names, watched, and whether the log was seen missing (then a watch waits for its creation). */
async function listLog(store: QueueStore, watch: Watcher): Promise<Listing> {
  const { session, layout } = store;
  try {
    return { names: await session.getChildren(layout.eventLog, { watch }), gone: false };
  } catch (err) {
    if (!(err instanceof NoNodeError)) throw err;
    if (!(await session.exists(layout.eventLog, { watch }))) return { names: [], gone: true };
    return { names: await session.getChildren(layout.eventLog, { watch }), gone: true }; // made again meanwhile
  }
}

const logs = new WeakMap<BackendContext, EventLog>();

/** The event log state of a backend, made on first use. */
export function eventLogOf(ctx: BackendContext): EventLog {
  let log = logs.get(ctx);
  if (!log) {
    log = new EventLog(ctx);
    logs.set(ctx, log);
  }
  return log;
}

/** The event log state of a backend if it was ever made. */
export function existingEventLog(ctx: BackendContext): EventLog | undefined {
  return logs.get(ctx);
}
