/**
 * WatchLoop: keeps a watch armed until it is closed.
 *
 * ZooKeeper watches fire once, and re-arming one is a read that can fail: a
 * connection loss, a request timeout during an outage, a session expiry (which
 * also drops every watch), a node that is not there yet. Code that re-arms
 * from the watch callback and gives up on the first failure stops following
 * for good. A WatchLoop owns the whole cycle instead:
 *
 *   read(watch) -> onRead(value) -> wait for the watch to fire -> read(watch) -> ...
 *
 * - every fire leads to one more read; a fire during a read is not lost (the
 *   read is repeated once it is done);
 * - any failure of `read` or `onRead` is reported to `onError` and retried
 *   with backoff (full jitter, `minDelayMs` doubling up to `maxDelayMs`),
 *   cut short when the session reconnects;
 * - a new session (after expiry) has none of the old watches: the loop reads
 *   again as soon as it is up (and after any reconnect, which is cheap and
 *   covers a watch the wire client could not restore);
 * - `close()`, or the session closing, stops it; no timer is left behind.
 *
 * `read` passes the `watch` it is given to every read that should wake the
 * loop (it may arm several: a data watch and, when the node is missing, an
 * exists-watch). The same function is passed every time, so the session
 * layer never registers it twice on one path. `onRead` receives each value,
 * changed or not.
 *
 * ```ts
 * const loop = new WatchLoop(session, {
 *   read: (watch) => session.getData('/config', { watch }),
 *   onRead: ({ data }) => apply(data),
 *   onError: (err) => log.warn(err),
 * });
 * await loop.start(); // the first read; rejects if it fails (the loop retries anyway)
 * // ...
 * loop.close();
 * ```
 */
// node:timers' own functions: a test's faked global timers do not stall the re-arming
import { clearTimeout, setTimeout } from 'node:timers';
import { ClosedError } from '../errors.js';
import type { Session } from './session.js';
import type { Watcher } from './types.js';

/** What a `WatchLoop` reads and where the results and failures go. */
export interface WatchLoopOptions<T> {
  /** Reads the state to follow, arming `watch` on each read that should wake the loop. */
  read: (watch: Watcher) => Promise<T>;
  /** Receives the value of each successful read. A throw counts as a failed read. */
  onRead: (value: T) => void | Promise<void>;
  /** Each failure (the loop retries it). Not called for the failure `start()` rejects with. */
  onError?: (error: unknown) => void;
  /** First wait after a failure, ms. Default 100. */
  minDelayMs?: number;
  /** Longest wait between retries, ms. Default 5000. */
  maxDelayMs?: number;
}

export const DEFAULT_WATCH_RETRY_MIN_MS = 100;
export const DEFAULT_WATCH_RETRY_MAX_MS = 5000;

/** Follows what `read` reads, keeping its watch armed until `close()`. */
export class WatchLoop<T> {
  private first: Promise<void> | undefined;
  private isClosed = false;
  /** A fire (or a new session) asked for another read. */
  private dirty = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly minDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly detach: () => void;

  constructor(
    private readonly session: Session,
    private readonly options: WatchLoopOptions<T>,
  ) {
    this.minDelayMs = options.minDelayMs ?? DEFAULT_WATCH_RETRY_MIN_MS;
    this.maxDelayMs = Math.max(this.minDelayMs, options.maxDelayMs ?? DEFAULT_WATCH_RETRY_MAX_MS);
    const onReconnected = ({ newSession }: { newSession: boolean }) => {
      if (newSession) this.dirty = true;
      this.wakeUp(); // also cuts a backoff short
    };
    const onClosed = () => this.close();
    session.on('reconnected', onReconnected);
    session.once('closed', onClosed);
    this.detach = () => {
      session.off('reconnected', onReconnected);
      session.off('closed', onClosed);
    };
  }

  /** True once closed (by `close()` or by the session closing). */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Runs the first read and `onRead`, and keeps the loop going from then on.
   * Resolves once that first read succeeded; rejects with its failure, but
   * the loop keeps retrying until closed (close it to give up). Calling it
   * again returns the same promise.
   */
  start(): Promise<void> {
    if (this.first) return this.first;
    if (this.isClosed || this.session.closed) return Promise.reject(new ClosedError('watch loop'));
    const first = this.cycle();
    this.first = first;
    void first.then(
      () => this.run(0),
      () => {
        this.dirty = true;
        return this.run(1);
      },
    );
    return first;
  }

  /** Reads again now (e.g. after a local write), without waiting for the watch. */
  refresh(): void {
    this.dirty = true;
    this.wakeUp();
  }

  /** Stops the loop: no more reads, nothing left scheduled. Idempotent. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    clearTimeout(this.timer);
    this.detach();
    this.wakeUp();
  }

  private readonly watcher: Watcher = () => {
    this.dirty = true;
    this.wakeUp();
  };

  private wakeUp(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async cycle(): Promise<void> {
    this.dirty = false;
    const value = await this.options.read(this.watcher);
    if (!this.isClosed) await this.options.onRead(value);
  }

  private async run(failures: number): Promise<void> {
    while (!this.stopped()) {
      if (failures > 0) await this.pause(this.backoff(failures));
      else if (!this.dirty) await new Promise<void>((resolve) => (this.wake = resolve));
      if (this.stopped()) return;
      try {
        await this.cycle();
        failures = 0;
      } catch (err) {
        if (this.stopped()) return;
        this.dirty = true;
        failures++;
        this.options.onError?.(err);
      }
    }
  }

  private stopped(): boolean {
    if (this.session.closed) this.close();
    return this.isClosed;
  }

  /** Waits `ms`, or less when woken (a reconnect, a refresh, close). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        clearTimeout(this.timer);
        resolve();
      };
      this.timer = setTimeout(() => this.wakeUp(), ms);
    });
  }

  /** Full jitter over an exponential cap, never below `minDelayMs`. */
  private backoff(failures: number): number {
    const cap = Math.min(this.maxDelayMs, this.minDelayMs * 2 ** Math.min(failures - 1, 20));
    return this.minDelayMs + Math.floor(Math.random() * (cap - this.minDelayMs));
  }
}
