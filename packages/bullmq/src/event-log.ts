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
 * finds nothing new waits for a change, not for a poll.
 */
import { randomBytes } from 'node:crypto';
import { NodeExistsError, NoNodeError, type QueueStore, sequenceOf, type Watcher, WatchLoop } from '@zkq/core';
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

export class EventLog {
  /** Log nodes known from the latest listing, oldest first. */
  nodes: LogNode[] = [];
  /** Counts listings: a reader that saw version v waits for a later one. */
  version = 0;
  /** Where a read of `$` (only what is new) starts; set once, then moved on by `$` reads. */
  dollar: Cursor | undefined;
  private closedFlag = false;
  private following: Promise<void> | undefined;
  private follower: WatchLoop<string[]> | undefined;
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
      const loop = new WatchLoop<string[]>(store.session, {
        read: (watch) => listLog(store, watch),
        onRead: (names) => this.onListing(names),
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
  tail(): Cursor {
    return { seq: this.nodes.at(-1)?.seq ?? -1, index: Number.POSITIVE_INFINITY };
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
      read: (watch) => this.keepRegistered(store, watch),
      onRead: () => undefined,
      onError: this.ctx.onError,
    });
    this.registration = loop;
    if (this.closedFlag) return loop.close();
    await loop.start();
  }

  private async keepRegistered(store: QueueStore, watch: Watcher): Promise<void> {
    const { session, layout } = store;
    const node = `${layout.eventListeners}/${this.id}`;
    if (await session.exists(node, { watch })) return;
    try {
      await session.create(node, undefined, 'ephemeral');
    } catch (err) {
      if (err instanceof NodeExistsError) return;
      if (!(err instanceof NoNodeError)) throw err;
      // The queue was obliterated: register once it is made again (the watch says when).
      if (await session.exists(layout.eventListeners, { watch })) throw err; // made meanwhile: try again
    }
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

  private onListing(names: string[]): void {
    this.nodes = names
      .filter((n) => n.startsWith('e-'))
      .map((name) => ({ name, seq: sequenceOf(name) }))
      .sort((a, b) => a.seq - b.seq);
    this.version++;
    for (const wake of [...this.waiters]) wake();
  }
}

/** The log's node names, watched; none (with a watch on its creation) while the queue does not exist. */
async function listLog(store: QueueStore, watch: Watcher): Promise<string[]> {
  const { session, layout } = store;
  try {
    return await session.getChildren(layout.eventLog, { watch });
  } catch (err) {
    if (!(err instanceof NoNodeError)) throw err;
    if (await session.exists(layout.eventLog, { watch })) return session.getChildren(layout.eventLog, { watch });
    return [];
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
