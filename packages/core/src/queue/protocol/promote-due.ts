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
import { bucketsOf, removeEmptyFenced, removeIfEmpty } from './walks.js';

/** Jobs read at once while promoting. */
const PROMOTE_READ = 100;

/**
 * How long (ZooKeeper's clock) an empty delayed container that is not the
 * current one must have been seen empty before the leader removes it, ms: a
 * container an adder has just made is not removed before its pointer lands.
 */
export const EMPTY_SETTLE_MS = 1000;

/**
 * Empty delayed containers a leader's walks saw, with the time (ZooKeeper's
 * clock) each was first seen empty; kept by the leader from walk to walk: a
 * walk that went on to its end (or to the first container ahead that holds a
 * job) replaces them with its own, one that stopped short of the containers
 * ahead keeps those of the containers it did not reach.
 */
export type EmptySightings = Map<string, number>;

/**
 * Promotes every due delayed job. Any number of processes may promote at
 * once: each job's move rewrites its record at the version read and deletes
 * its delayed pointer, so of two promoters that read the same job one moves
 * it and the other's unit fails on that op, harmlessly (no duplicate, no
 * loss). `fence` (a leader's election check) makes a deposed leader's
 * promotions fail with FencedError. Removes the buckets, hours and days it
 * leaves empty in the past.
 *
 * With `empties` (the leader's), it also walks past the due ones to the
 * first container that holds a job (listing no more than that: an hour's
 * buckets are told empty by their stat), and removes, fenced, every
 * container known empty for EMPTY_SETTLE_MS (by its own sighting, or its
 * children's) that is not the current one (the tail bucket of the hour that
 * holds `now`, where adders write now): an hour or a day emptied before its
 * time, or ahead of it (its jobs promoted by hand or removed). With `ahead`
 * false, a walk stops at the first job not due yet, as a promoter's does:
 * the leader walks on past one (to the containers ahead, removing what is
 * empty there) only now and then, so that a busy queue, whose current hour
 * always holds a job not due yet, adds no request to each of its looks (see
 * LeaderLooks). A removal never loses an add racing it: a delete of a container
 * that is not empty fails (NotEmpty), and a pointer created into a removed
 * one fails with NoNode, its writer making the container again
 * (containers.ts).
 *
 * Resolves with the ids promoted and the next due time, if any; a due job
 * whose record could not be read keeps its pointer (the others are promoted)
 * and its error is `failure`, for the caller to report and look again. A due
 * job whose move lost a race (its record rewritten since it was read: an
 * edit of its data, another promoter) counts in `raced`: it may still be
 * due, and an edit of a record fires no watch on the delayed containers.
 */
export async function promoteDue(
  store: ProtocolContext,
  fence: (() => ProtocolOp[]) | undefined,
  watch?: Watcher,
  /** The time due jobs are judged against (ZooKeeper's, see ServerClock). */
  now = Date.now(),
  empties?: EmptySightings,
  /** With `empties`: the walk goes on past a job not due yet, to the containers ahead. */
  ahead = true,
): Promise<{ promoted: string[]; nextDue: number | undefined; failure?: unknown; raced?: number }> {
  const { layout } = store;
  const promoted: string[] = [];
  let raced = 0;
  const unread: unknown[] = [];
  const seen = new Map<string, number>();
  /** Containers this walk judged (empty or not), when it stops short of those ahead. */
  const reached = new Set<string>();
  /** The due time of the first job not due yet, once the walk went on past it. */
  let stop: number | undefined;
  const done = (nextDue: number | undefined, short = false) => {
    if (empties) {
      if (short) for (const path of reached) empties.delete(path);
      else empties.clear();
      for (const [path, at] of seen) empties.set(path, at);
    }
    return {
      promoted,
      nextDue,
      ...(unread.length > 0 ? { failure: unread[0] } : {}),
      ...(raced > 0 ? { raced } : {}),
    };
  };
  /**
   * Removes empty container `path`: at once when its time is past; by the
   * leader once known to exist, empty, since EMPTY_SETTLE_MS (its own
   * sighting, or `since`: its children's, removed just now). Resolves with
   * that time when it is gone, undefined when it stays.
   */
  const drop = async (path: string, past: boolean, since = now): Promise<number | undefined> => {
    reached.add(path);
    if (past) return removeIfEmpty(store, path).then(() => now);
    if (!empties || !fence) return undefined;
    const from = Math.min(empties.get(path) ?? now, since);
    if (now - from < EMPTY_SETTLE_MS) {
      seen.set(path, from);
      return undefined;
    }
    return (await removeEmptyFenced(store, path, fence)) ? from : undefined;
  };
  /** The latest of the times its children were empty since, for a container whose children all went. */
  const latest = (times: number[]) => (times.length > 0 ? Math.max(...times) : now);
  /**
   * The leader's look at a day or an hour of jobs not due yet (no watch:
   * whatever is added there is due after its start, when it is walked): its
   * empty hours or buckets, then it, removed once settled, up to the first
   * that holds a job. True when it is gone.
   */
  const gone = async (container: string, hourly: boolean): Promise<number | undefined> => {
    let left = 0;
    const went: number[] = [];
    for (const name of hourly ? await bucketsOf(store, container) : (await store.children(container)).sort()) {
      const path = `${container}/${name}`;
      if (hourly) {
        const stat = await store.session.exists(path);
        if (stat && stat.numChildren > 0) return undefined;
        const since = stat ? await drop(path, false) : now;
        if (since === undefined) left++;
        else went.push(since);
      } else {
        const since = await gone(path, true);
        if (since === undefined) return undefined;
        went.push(since);
      }
    }
    return left === 0 ? drop(container, false, latest(went)) : undefined;
  };
  for (const day of (await store.children(layout.delayedDir, watch)).sort()) {
    const dayStart = numberOf(day) * DELAY_DAY_MS;
    const dayDir = `${layout.delayedDir}/${day}`;
    if (dayStart > now) {
      if (empties && (await gone(dayDir, false)) !== undefined) continue;
      return done(stop ?? dayStart);
    }
    const hours = (await store.children(dayDir, watch)).sort();
    let hoursLeft = hours.length;
    const hoursWent: number[] = [];
    for (const hour of hours) {
      const hourStart = numberOf(hour) * DELAY_WINDOW_MS;
      const container = `${dayDir}/${hour}`;
      if (hourStart > now) {
        const since = empties ? await gone(container, true) : undefined;
        if (since !== undefined) {
          hoursLeft--;
          hoursWent.push(since);
          continue;
        }
        return done(stop ?? hourStart);
      }
      // walking on past a job not due yet: only the containers ahead
      if (stop !== undefined) continue;
      const past = hourStart + DELAY_WINDOW_MS <= now;
      let nextDue: number | undefined;
      const buckets = await bucketsOf(store, container, watch);
      let bucketsLeft = buckets.length;
      for (const bucket of buckets) {
        const dir = `${container}/${bucket}`;
        reached.add(dir);
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
          const moved = await applyMoves(store, moves, fence);
          raced += moves.length - moved.length;
          promoted.push(...moved);
        }
        // the current hour's tail bucket is where adders write now: it stays until the hour is past
        const tail = bucket === buckets[buckets.length - 1];
        if (due.length === names.length && (past || !tail) && (await drop(dir, past)) !== undefined) bucketsLeft--;
      }
      if (nextDue !== undefined) {
        if (!empties || !ahead) return done(nextDue, true);
        stop = nextDue;
        continue;
      }
      if (past && bucketsLeft === 0 && (await drop(container, past)) !== undefined) {
        hoursLeft--;
        hoursWent.push(now);
      }
    }
    if (stop !== undefined) continue;
    if (dayStart + DELAY_DAY_MS <= now) await removeIfEmpty(store, dayDir);
    else if (hoursLeft === 0) await drop(dayDir, false, latest(hoursWent));
  }
  return done(stop);
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
