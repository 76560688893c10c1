/**
 * Promotion of due delayed jobs to ready, on ZooKeeper's clock. Called by
 * the Housekeeper; any number of promoters may run at once (see promoteDue).
 */
import type { Watcher } from '../../zk/types.js';
import { MalformedJobError } from '../errors.js';
import { DELAY_DAY_MS, DELAY_WINDOW_MS, dueOfDelayed, idOfDelayed, numberOf } from '../layout.js';
import type { ProtocolContext, StoredJob } from './context.js';
import type { ProtocolOp } from './executor.js';
import { applyMoves, type Move, promotedRecord, removal, toReady } from './moves.js';
import { bucketsOf, removeIfEmpty } from './walks.js';

/** Jobs read at once while promoting. */
const PROMOTE_READ = 100;

/**
 * Promotes every due delayed job. Any number of processes may promote at
 * once: each job's move rewrites its record at the version read and deletes
 * its delayed pointer, so of two promoters that read the same job one moves
 * it and the other's unit fails on that op, harmlessly (no duplicate, no
 * loss). `fence` (a leader's election check) makes a deposed leader's
 * promotions fail with FencedError. Removes the buckets, hours and days it
 * leaves empty in the past. Resolves with the ids promoted and the next due
 * time, if any; a due job whose record could not be read keeps its pointer
 * (the others are promoted) and its error is `failure`, for the caller to
 * report and look again.
 */
export async function promoteDue(
  store: ProtocolContext,
  fence: (() => ProtocolOp[]) | undefined,
  watch?: Watcher,
  /** The time due jobs are judged against (ZooKeeper's, see ServerClock). */
  now = Date.now(),
): Promise<{ promoted: string[]; nextDue: number | undefined; failure?: unknown }> {
  const { layout } = store;
  const promoted: string[] = [];
  const unread: unknown[] = [];
  const done = (nextDue: number | undefined) =>
    unread.length > 0 ? { promoted, nextDue, failure: unread[0] } : { promoted, nextDue };
  for (const day of (await store.children(layout.delayedDir, watch)).sort()) {
    const dayStart = numberOf(day) * DELAY_DAY_MS;
    if (dayStart > now) return done(dayStart);
    const dayDir = `${layout.delayedDir}/${day}`;
    const hours = (await store.children(dayDir, watch)).sort();
    for (const hour of hours) {
      const hourStart = numberOf(hour) * DELAY_WINDOW_MS;
      if (hourStart > now) return done(hourStart);
      const container = `${dayDir}/${hour}`;
      let nextDue: number | undefined;
      const buckets = await bucketsOf(store, container, watch);
      for (const bucket of buckets) {
        const dir = `${container}/${bucket}`;
        const names = await store.children(dir, watch);
        // by due time; jobs due at the same millisecond in the order they were added (ids count up)
        const due = names.filter((n) => dueOfDelayed(n) <= now).sort(byDueThenId);
        for (const n of names) if (dueOfDelayed(n) > now) nextDue = Math.min(nextDue ?? Infinity, dueOfDelayed(n));
        for (let i = 0; i < due.length; i += PROMOTE_READ) {
          const moves = await promotions(
            store,
            due.slice(i, i + PROMOTE_READ).map((n) => `${dir}/${n}`),
            unread,
          );
          promoted.push(...(await applyMoves(store, moves, fence)));
        }
        if (due.length === names.length && hourStart + DELAY_WINDOW_MS <= now) await removeIfEmpty(store, dir);
      }
      if (nextDue !== undefined) return done(nextDue);
      if (hourStart + DELAY_WINDOW_MS <= now) await removeIfEmpty(store, container);
    }
    if (dayStart + DELAY_DAY_MS <= now) await removeIfEmpty(store, dayDir);
  }
  return done(undefined);
}

function byDueThenId(a: string, b: string): number {
  return dueOfDelayed(a) - dueOfDelayed(b) || ID_ORDER.compare(idOfDelayed(a), idOfDelayed(b));
}

/** Numeric-aware: id 9 before id 10. */
const ID_ORDER = new Intl.Collator('en', { numeric: true });

/**
 * Moves of due delayed pointers to ready; a pointer whose record is gone, is
 * not a job's or is not delayed is deleted. A record that could not be read
 * (any other error) gets no move: its pointer stays for the next look, and
 * its error goes to `unread`.
 */
async function promotions(store: ProtocolContext, pointers: string[], unread: unknown[]): Promise<Move[]> {
  const moves = await Promise.all(
    pointers.map(async (pointer): Promise<Move | undefined> => {
      const id = idOfDelayed(pointer.slice(pointer.lastIndexOf('/') + 1));
      let stored: StoredJob | undefined;
      try {
        stored = await store.getJob(id);
      } catch (err) {
        if (!(err instanceof MalformedJobError)) {
          unread.push(err);
          return undefined;
        }
      }
      if (stored?.record.state !== 'delayed') {
        return removal(store, { id, version: undefined, pointer }, []); // removed meanwhile, or foreign
      }
      const events = [{ event: 'waiting', jobId: id, prev: 'delayed', ts: Date.now() }];
      return toReady(store, stored as StoredJob, promotedRecord(stored.record), pointer, events);
    }),
  );
  return moves.filter((m) => m !== undefined);
}
