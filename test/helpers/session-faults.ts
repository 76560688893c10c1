/**
 * What some queue tests need beyond the public API, kept in one
 * place so that a change of the protocol's internals touches only this file:
 *
 * - layout paths: a job's claim node, the housekeeping election's nodes;
 * - faults injected at a session's request boundary, at points a TCP proxy
 *   cannot hit on purpose: between two pipelined requests, between a commit
 *   and the next request, between a failed create and the read after it, or
 *   between two reads.
 *   They wrap the methods of one `Session` object; the server sees ordinary
 *   requests (or none, for a request "lost" before it was sent).
 */
import {
  BadVersionError,
  ConnectionLossError,
  NodeExistsError,
  NoNodeError,
  type Op,
  type OpResult,
  type Session,
} from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';

const METHODS = ['multi', 'create', 'delete', 'setData', 'getData', 'readMulti', 'exists', 'getChildren'] as const;
type AnyMethod = (...args: unknown[]) => Promise<unknown>;
type Multi = (ops: readonly Op[]) => Promise<OpResult[]>;

/** Deletes the claim node of job `id`, as its owner's session expiry would. */
export async function deleteClaim(plain: Session, queue: string, id: string): Promise<void> {
  await plain.delete(new QueueLayout(queue).claim(id));
}

/** Names of the participants' nodes in the queue's housekeeping election. */
export function electionNodes(plain: Session, queue: string): Promise<string[]> {
  return plain.getChildren(new QueueLayout(queue).leaderDir);
}

/** Deletes every node of the housekeeping election (an operator's cleanup): the leader is deposed. */
export async function deleteElectionNodes(plain: Session, queue: string): Promise<string[]> {
  const dir = new QueueLayout(queue).leaderDir;
  const names = await plain.getChildren(dir);
  await Promise.all(names.map((n) => plain.delete(`${dir}/${n}`).catch(() => undefined)));
  return names;
}

/** True for the error of a multi that lost a race on `queue`'s data (not a leader's fence). */
export function isConflict(err: unknown, queue: string): boolean {
  const racy = err instanceof NoNodeError || err instanceof BadVersionError || err instanceof NodeExistsError;
  return racy && !(err.path ?? '').startsWith(new QueueLayout(queue).leaderDir);
}

/** A multi that only deletes settled receipts (the executor's background cleanup), not a job's transaction. */
function isReceiptCleanup(ops: unknown): boolean {
  return (
    Array.isArray(ops) &&
    ops.length > 0 &&
    ops.every((op: { op?: string; path?: string }) => op.op === 'delete' && op.path?.includes('/receipts/'))
  );
}

/**
 * When the next transaction of `session` commits (receipt cleanups aside), `onCommit` starts; every
 * later request of the session (of any kind) waits until it is done.
 */
export function holdAfterNextCommit(session: Session, onCommit: () => Promise<unknown>): void {
  let held: Promise<unknown> | undefined;
  const methods = session as unknown as Record<(typeof METHODS)[number], AnyMethod>;
  for (const name of METHODS) {
    const original = methods[name].bind(session);
    methods[name] = async (...args: unknown[]) => {
      if (held) await held;
      const result = await original(...args);
      if (name === 'multi' && !isReceiptCleanup(args[0])) held ??= onCommit();
      return result;
    };
  }
}

/**
 * A connection loss right after the reply of the next transaction: the
 * transactions sent while it was in flight never reach the server and fail
 * with ConnectionLossError once it has committed; later ones go through.
 * `lost()` says how many were dropped.
 */
export function loseTransactionsInFlightWithNext(session: Session): { lost: () => number } {
  const original: Multi = session.multi.bind(session);
  let first: Promise<OpResult[]> | undefined;
  let settled = false;
  let lost = 0;
  session.multi = (ops) => {
    if (settled) return original(ops);
    if (!first) {
      first = original(ops);
      first.then(
        () => {
          settled = true;
        },
        () => {
          settled = true;
        },
      );
      return first;
    }
    lost++;
    const fail = () => {
      throw new ConnectionLossError(ops[0]?.path);
    };
    return first.then(fail, fail);
  };
  return { lost: () => lost };
}

/** The first time a transaction of `session` fails with NodeExists, `action` runs before the caller hears of it. */
export function beforeNodeExistsReply(session: Session, action: () => Promise<unknown>): void {
  const original: Multi = session.multi.bind(session);
  let done = false;
  session.multi = async (ops) => {
    try {
      return await original(ops);
    } catch (err) {
      if (err instanceof NodeExistsError && !done) {
        done = true;
        await action();
      }
      throw err;
    }
  };
}

/**
 * The next time `session` reads ZooKeeper's clock (a write to the queue's
 * `clock` node: a ttl key is being judged, after the key itself was read),
 * `action` runs before that request is sent.
 */
export function beforeNextClockRead(session: Session, queue: string, action: () => Promise<unknown>): void {
  const original = session.setData.bind(session);
  const clock = new QueueLayout(queue).clock;
  let done = false;
  session.setData = async (...args: Parameters<Session['setData']>) => {
    if (!done && args[0] === clock) {
      done = true;
      await action();
    }
    return original(...args);
  };
}

/**
 * Watches the transactions of `session` from now on: counts those that lost
 * a race on the queue's data (see isConflict); the next one to commit holds
 * its reply until `onCommit` has run.
 */
export function watchTransactions(
  session: Session,
  queue: string,
  onCommit: () => Promise<unknown>,
): { conflicts: () => number } {
  const original: Multi = session.multi.bind(session);
  let conflicts = 0;
  let pending: (() => Promise<unknown>) | undefined = onCommit;
  session.multi = async (ops) => {
    let result: OpResult[];
    try {
      result = await original(ops);
    } catch (err) {
      if (isConflict(err, queue)) conflicts++;
      throw err;
    }
    const hook = pending;
    pending = undefined;
    if (hook) await hook();
    return result;
  };
  return { conflicts: () => conflicts };
}
