/**
 * The shared engine of the ordered recipes (lock, read/write lock, leader
 * election): "given the sequential nodes under a parent, may I proceed, and
 * if not, which single node do I watch?" A *driver* answers the question;
 * `waitForTurn` does the waiting. Each waiter watches exactly one other node,
 * so a release wakes one waiter, never the herd.
 *
 * The predecessor is watched with a *data* watch (getData), as Curator's
 * LockInternals does, not an exists-watch: when the predecessor is already
 * gone the read fails with NoNode and leaves nothing on the server, whereas
 * an exists-watch on a missing node would stay registered for a node that
 * never comes back (sequential names are never reused).
 *
 * Node names are compared by their sequence number (the last 10 digits that
 * ZooKeeper appends), never by prefix: `read-…-0000000007` sorts before
 * `write-…-0000000008` whatever the prefixes.
 *
 * Suspension: a wait keeps going (the watch survives a reconnect with the same
 * session). Session loss: pending watches report `sessionLost`; the wait
 * rejects with `SessionExpiredError` because the waiter's ephemeral node is gone.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError, ClosedError, InvalidArgumentError, TimeoutError } from '../errors.js';
import { NoNodeError, SessionExpiredError } from '../zk/errors.js';
import { sequenceOf, sortBySequence } from '../zk/sequence.js';
import type { Session } from '../zk/session.js';
import type { WatchEvent, Watcher } from '../zk/types.js';

/** A driver's answer: proceed, or watch `watch` (a sibling name) and ask again when it changes. */
export type TurnDecision = { proceed: true } | { proceed: false; watch: string };

/** Decides, from the sorted participants, whether `own` may proceed (Curator's lock driver). */
export interface LockDriver {
  /** Which sibling names take part in the ordering (the rest are ignored). */
  participates(name: string): boolean;
  /** `sorted` holds the participants by sequence number and contains `own`. */
  decide(sorted: readonly string[], own: string): TurnDecision;
}

/** Exclusive ordering: the lowest node proceeds; the others watch their immediate predecessor. */
export const exclusiveDriver: LockDriver = {
  participates: (name) => sortBySequence([name]).length === 1,
  decide(sorted, own) {
    const index = sorted.indexOf(own);
    return index === 0 ? { proceed: true } : { proceed: false, watch: sorted[index - 1] as string };
  },
};

/** Counters a waiter keeps, for tests and diagnostics. */
export interface WaitStats {
  /** Watches set on a predecessor. */
  watches: number;
  /** Times a watch fired and woke this waiter. */
  wakeups: number;
}

/** Where and how long to wait. */
export interface TurnOptions {
  /** Absolute deadline (ms since the epoch); undefined waits forever. */
  deadline?: number | undefined;
  /** The timeout the deadline came from, for the error message. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** What is waited for, in error messages ("lock /x"). */
  what: string;
  stats?: WaitStats;
  /** Told of each step of a wait (for diagnostics; see `TurnStep`). */
  onStep?: ((step: TurnStep) => void) | undefined;
  /**
   * True once the waiter's node went with a session lost (`waitForTurn` then
   * rejects with `SessionExpiredError`): a listing retried on the new session
   * may still show it, the server keeping the session given up until it
   * expires it.
   */
  nodeLost?: (() => boolean) | undefined;
}

/** A step of `waitForTurn`: a watch set on `watch`, a wake-up by `event`, or the turn come. */
export type TurnStep =
  | { step: 'watch'; watch: string }
  | { step: 'woke'; watch: string; event: string }
  | { step: 'gone'; watch: string }
  | { step: 'proceed' };

/**
 * Resolves once `driver` lets the node `dir/own` proceed. Rejects with
 * `TimeoutError`, `AbortedError`, `SessionExpiredError` (session lost while
 * waiting) or `NoNodeError` (our node was deleted by someone else). Never
 * deletes `own`: the caller owns its node.
 */
export async function waitForTurn(
  session: Session,
  dir: string,
  own: string,
  driver: LockDriver,
  options: TurnOptions,
) {
  for (;;) {
    throwIfAborted(options);
    const sorted = sortBySequence((await session.getChildren(dir)).filter((n) => driver.participates(n)));
    if (options.nodeLost?.()) throw new SessionExpiredError(joinPath(dir, own));
    if (!sorted.includes(own)) throw new NoNodeError(joinPath(dir, own));
    const decision = driver.decide(sorted, own);
    if (decision.proceed) {
      options.onStep?.({ step: 'proceed' });
      return;
    }
    const watch = decision.watch;
    const event = await watchOnce(session, joinPath(dir, watch), options);
    options.onStep?.(event ? { step: 'woke', watch, event: event.type } : { step: 'gone', watch });
    if (event?.type === 'sessionLost') throw new SessionExpiredError(joinPath(dir, own));
  }
}

/** What `watchOnce` resolves with after a reconnection: the watch may be lost, look again. */
export interface Reconnected {
  type: 'reconnected';
  path: string;
}

/**
 * Watches `path` and waits for the watch to fire (or the session to
 * reconnect: `{ type: 'reconnected' }`, the caller looks again). Resolves with `undefined`
 * at once when the node is already `until` (default: absent, i.e. wait for a
 * deletion; `present` waits for a creation).
 *
 * Waiting for a deletion uses a data watch, which a missing node does not
 * take (see the module notes); only waiting for a creation needs an
 * exists-watch.
 */
export async function watchOnce(
  session: Session,
  path: string,
  options: TurnOptions,
  until: 'absent' | 'present' = 'absent',
): Promise<WatchEvent | Reconnected | undefined> {
  let fire!: (event: WatchEvent | Reconnected) => void;
  let fail!: (err: Error) => void;
  const fired = new Promise<WatchEvent | Reconnected>((resolve, reject) => {
    fire = resolve;
    fail = reject;
  });
  // A closed session drops its pending watches without a word: stop waiting.
  const onClosed = () => fail(new ClosedError(`session of ${options.what}`));
  // A reconnection may have lost the watch (a server restarted, a reply torn with its connection):
  // the caller looks again, and watches again, rather than wait on a watch that may never fire.
  const onReconnected = () => fire({ type: 'reconnected', path });
  const watch = (event: WatchEvent) => fire(event);
  if (until === 'absent') {
    if (!(await existsWithDataWatch(session, path, watch))) return undefined;
  } else if (await session.exists(path, { watch })) return undefined;
  if (options.stats) options.stats.watches++;
  options.onStep?.({ step: 'watch', watch: baseName(path) });
  session.once('closed', onClosed);
  session.on('reconnected', onReconnected);
  try {
    const event = await raceWait(fired, options);
    if (options.stats) options.stats.wakeups++;
    return event;
  } finally {
    session.off('closed', onClosed);
    session.off('reconnected', onReconnected);
  }
}

/** Reads `path` with a data watch; false (and no watch set) when it does not exist. */
export async function existsWithDataWatch(session: Session, path: string, watch: Watcher): Promise<boolean> {
  try {
    await session.getData(path, { watch });
    return true;
  } catch (err) {
    if (err instanceof NoNodeError) return false;
    throw err;
  }
}

/** Waits for `promise`, or rejects on the deadline or the abort signal of `options`. */
export function raceWait<T>(promise: Promise<T>, options: TurnOptions): Promise<T> {
  throwIfAborted(options);
  const { deadline, signal } = options;
  if (deadline === undefined && !signal) return promise;
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => finish(() => reject(new AbortedError(options.what, { cause: signal?.reason })));
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    if (deadline !== undefined) {
      const timeoutMs = options.timeoutMs ?? 0;
      timer = setTimeout(
        () => finish(() => reject(new TimeoutError(options.what, timeoutMs))),
        Math.max(0, deadline - Date.now()),
      );
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => finish(() => resolve(value)),
      (err) => finish(() => reject(err)),
    );
  });
}

/** Throws when the signal fired or the deadline passed. */
export function throwIfAborted(options: TurnOptions): void {
  if (options.signal?.aborted) throw new AbortedError(options.what, { cause: options.signal.reason });
  if (options.deadline !== undefined && Date.now() >= options.deadline) {
    throw new TimeoutError(options.what, options.timeoutMs ?? 0);
  }
}

/** Public wait options of every recipe that blocks. */
export interface WaitOptions {
  /** Give up after this many milliseconds (TimeoutError). Default: wait forever. */
  timeout?: number;
  /** Give up when this signal fires (AbortedError). */
  signal?: AbortSignal;
}

/** Validates public wait options and turns them into `TurnOptions`. */
export function turnOptions(what: string, options: WaitOptions = {}, stats?: WaitStats): TurnOptions {
  const { timeout, signal } = options;
  if (timeout !== undefined && !(Number.isFinite(timeout) && timeout >= 0)) {
    throw new InvalidArgumentError(`timeout must be a finite number >= 0, got ${timeout}`, 'options.timeout');
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal must be an AbortSignal', 'options.signal');
  }
  const result: TurnOptions = { what, signal, timeoutMs: timeout };
  if (timeout !== undefined) result.deadline = Date.now() + timeout;
  if (stats) result.stats = stats;
  return result;
}

/** Validates a recipe's znode path (inside the session's namespace). */
export function checkPath(path: unknown, argument = 'path'): string {
  if (typeof path !== 'string' || !path.startsWith('/') || path === '/' || path.endsWith('/') || path.includes('//')) {
    throw new InvalidArgumentError(
      `${argument} must be an absolute znode path like '/locks/x', got '${path}'`,
      argument,
    );
  }
  return path;
}

/** Validates an id that becomes node data or a node name. */
export function checkId(id: unknown, argument: string, asName = false): string {
  if (typeof id !== 'string' || id === '' || (asName && (id.includes('/') || id === '.' || id === '..'))) {
    throw new InvalidArgumentError(`${argument} must be a non-empty string${asName ? ' without /' : ''}`, argument);
  }
  return id;
}

export function joinPath(dir: string, name: string): string {
  return `${dir}/${name}`;
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Deletes `path`; a node already gone is fine. Retried on connection loss. */
export async function deleteIfExists(session: Session, path: string): Promise<void> {
  await session.retry(() =>
    session.delete(path).catch((err) => {
      if (!(err instanceof NoNodeError)) throw err;
    }),
  );
}

/**
 * Deletes an ephemeral node of this session's, unless already gone. A
 * session found expired takes the node with it (one session timeout later
 * at most, when it was declared lost while the server restarted): that ends
 * the delete instead of retrying it on the next session, which with
 * ZooKeeper unreachable waits out every retry's request timeout.
 */
export async function deleteEphemeral(session: Session, path: string): Promise<void> {
  await session.retry(() =>
    session.delete(path).catch((err) => {
      if (!(err instanceof NoNodeError) && !(err instanceof SessionExpiredError)) throw err;
    }),
  );
}

/** Creates a protected ephemeral sequential node `dir/<prefix>…`, creating `dir` when missing. */
export async function createMemberNode(session: Session, dir: string, prefix: string, data?: Buffer): Promise<string> {
  try {
    return await session.createProtected(joinPath(dir, prefix), data, 'ephemeral_sequential');
  } catch (err) {
    if (!(err instanceof NoNodeError)) throw err;
    await session.ensurePath(dir);
    return session.createProtected(joinPath(dir, prefix), data, 'ephemeral_sequential');
  }
}

/**
 * Deletes the nodes `dir/<prefix>…` that this session owns and that hold
 * `data` (one participant's leftovers); resolves with their paths.
 */
export async function deleteOwnNodes(session: Session, dir: string, prefix: string, data: string): Promise<string[]> {
  const owner = session.sessionId;
  const names = await session.getChildren(dir).catch((err) => (err instanceof NoNodeError ? [] : Promise.reject(err)));
  const removed: string[] = [];
  for (const name of names.filter((n) => n.startsWith(prefix))) {
    const path = joinPath(dir, name);
    const read = await session.getData(path).catch((err) => {
      if (!(err instanceof NoNodeError)) throw err;
    });
    if (read?.stat.ephemeralOwner !== owner || read.data.toString() !== data) continue;
    await deleteEphemeral(session, path);
    removed.push(path);
  }
  return removed;
}

export { sequenceOf, sortBySequence };

/** Wait between tries of a recipe's background refresh, ms. */
export const BACKGROUND_RETRY_MS = 1000;

/**
 * Runs a recipe's background refresh until it succeeds, the recipe stops
 * (`active()` false) or the session is closed; each failure is reported
 * through `onError` and tried again after BACKGROUND_RETRY_MS.
 */
export async function retryInBackground(
  session: Session,
  active: () => boolean,
  fn: () => Promise<void>,
  onError: (err: unknown) => void,
): Promise<void> {
  while (active()) {
    try {
      await fn();
      return;
    } catch (err) {
      if (session.closed) return;
      onError(err);
      await sleep(BACKGROUND_RETRY_MS);
    }
  }
}
