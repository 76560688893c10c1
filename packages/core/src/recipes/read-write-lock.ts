/**
 * ReadWriteLock: many readers or one writer (the ZooKeeper shared-lock recipe).
 *
 * Layout (one parent for both kinds, ordered by sequence number only):
 *   <path>/read-<12 hex id>-<10-digit seq>    EPHEMERAL_SEQUENTIAL, a reader
 *   <path>/write-<12 hex id>-<10-digit seq>   EPHEMERAL_SEQUENTIAL, a writer
 * A reader proceeds when no write node precedes it; otherwise it watches the
 * nearest earlier write node. A writer proceeds when it is the lowest node;
 * otherwise it watches its immediate predecessor. Arrival order is kept: a
 * reader that comes after a waiting writer waits behind it, so writers are
 * not starved.
 *
 * Suspension and session loss: as for `Lock` (each side is a `Lock`).
 */
import type { Session } from '../zk/session.js';
import { type LockDriver, sortBySequence } from './internals.js';
import { Lock, type LockOptions } from './lock.js';

const READ_PREFIX = 'read-';
const WRITE_PREFIX = 'write-';

const isLockNode = (name: string) =>
  (name.startsWith(READ_PREFIX) || name.startsWith(WRITE_PREFIX)) && sortBySequence([name]).length === 1;

/** Readers wait only for earlier writers: they watch the nearest earlier write node. */
export const readDriver: LockDriver = {
  participates: isLockNode,
  decide(sorted, own) {
    const index = sorted.indexOf(own);
    for (let i = index - 1; i >= 0; i--) {
      const name = sorted[i] as string;
      if (name.startsWith(WRITE_PREFIX)) return { proceed: false, watch: name };
    }
    return { proceed: true };
  },
};

/** Writers wait for every earlier node: they watch their immediate predecessor. */
export const writeDriver: LockDriver = {
  participates: isLockNode,
  decide(sorted, own) {
    const index = sorted.indexOf(own);
    return index === 0 ? { proceed: true } : { proceed: false, watch: sorted[index - 1] as string };
  },
};

/** A read/write lock under `path`: `readLock` is shared, `writeLock` exclusive. */
export class ReadWriteLock {
  /** The shared side: held by any number of readers while no earlier writer waits or holds. */
  readonly readLock: Lock;
  /** The exclusive side. */
  readonly writeLock: Lock;

  /** @param options `id` stored in this process's lock nodes. */
  constructor(session: Session, path: string, options: LockOptions = {}) {
    this.readLock = new Lock(session, path, options, readDriver, READ_PREFIX);
    this.writeLock = new Lock(session, path, options, writeDriver, WRITE_PREFIX);
  }
}
