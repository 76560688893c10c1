/**
 * Moves of jobs that are not active, and the reads that find them: the head
 * scan, promotion of due delayed jobs, retention of finished ones, and the
 * walks of bucketed containers the control operations use. Readers remove
 * the empty buckets and containers they meet (writers re-create them: see
 * containers.ts), so every listing stays small.
 */
import { NodeExistsError, NoNodeError, NotEmptyError } from '../../zk/errors.js';
import { sortBySequence } from '../../zk/sequence.js';
import type { Watcher } from '../../zk/types.js';
import { MalformedJobError } from '../errors.js';
import type { QueueEventRecord } from '../events.js';
import {
  DELAY_DAY_MS,
  DELAY_WINDOW_MS,
  dueOfDelayed,
  idOfDelayed,
  idOfPointer,
  LIFO_LANE,
  numberOf,
} from '../layout.js';
import { encodeRecord, type JobRecord } from '../record.js';
import type { KeepJobs } from '../types.js';
import { type Candidate, PLAIN_LANE, type Place } from './attempts.js';
import { eventOp, leaveSetOps, moveOps, orphanPointerOps, removeOps, rewriteOps, trimOps } from './builders.js';
import type { ProtocolContext as QueueStore, StoredJob } from './context.js';
import type { ProtocolOp, TxUnit, UnitResult } from './executor.js';
import { detachOps, joinBuilt, mayBePendingChild } from './flows.js';

/** Lanes in the order they are served: lifo first, then by priority. */
export function sortLanes(lanes: string[]): string[] {
  return lanes.slice().sort((a, b) => (a === LIFO_LANE ? -1 : b === LIFO_LANE ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

/** How events and counts name the waiting state of a lane: only real priorities are `prioritized`. */
export function waitingStateOf(lane: string | undefined): 'waiting' | 'prioritized' {
  return lane === undefined || lane === PLAIN_LANE || lane === LIFO_LANE ? 'waiting' : 'prioritized';
}

/** The bucket names of a container, in order (newest first with `newestFirst`). */
async function bucketsOf(
  store: QueueStore,
  container: string,
  watch?: Watcher,
  newestFirst = false,
): Promise<string[]> {
  return sortBuckets(await store.children(container, watch), newestFirst);
}

/** The bucket names among `names`, in order (newest first with `newestFirst`). */
function sortBuckets(names: readonly string[], newestFirst: boolean): string[] {
  const buckets = names.filter((n) => n.startsWith('b-'));
  return buckets.sort((a, b) => (newestFirst ? numberOf(b) - numberOf(a) : numberOf(a) - numberOf(b)));
}

/** Deletes a node if it is empty; gone or not empty is fine. */
async function removeIfEmpty(store: QueueStore, path: string): Promise<void> {
  await store.session.delete(path).catch((err) => {
    if (!(err instanceof NotEmptyError) && !(err instanceof NoNodeError)) throw err;
  });
}

// ---- the head ---------------------------------------------------------------

export interface ScanOptions {
  /** Most candidates to return. */
  limit: number;
  /** Job ids to leave out (active claims, jobs in hand). */
  exclude: ReadonlySet<string>;
  /** Watch every listing: fires when anything at the head changes (used when idle). */
  watch?: Watcher;
  /** Listings already read (path -> names), taken instead of listing again. */
  read?: ReadonlyMap<string, string[]>;
  /** Collects the paths the scan listed (or took from `read`), in order. */
  listed?: string[];
}

/**
 * The first `limit` claimable candidates, in serving order. Only the first
 * non-empty buckets are listed; empty buckets are removed on the way (but
 * the plain lane's tail), and so are lanes left empty.
 */
export async function scanHead(store: QueueStore, o: ScanOptions): Promise<Candidate[]> {
  const { layout } = store;
  const out: Candidate[] = [];
  // A listing read before is taken only below one read with it: a parent listed later may
  // name a child made since (a bucket re-created), which only a later listing shows.
  const list = async (path: string, parentRead: boolean) => {
    o.listed?.push(path);
    const known = parentRead && !o.watch ? o.read?.get(path) : undefined;
    return { names: known ?? (await store.children(path, o.watch)), read: known !== undefined };
  };
  const ready = await list(layout.ready, true);
  for (const lane of sortLanes(ready.names)) {
    const lifo = lane === LIFO_LANE;
    const container = layout.lane(lane);
    const laneList = await list(container, ready.read);
    const buckets = sortBuckets(laneList.names, lifo);
    const tail = lifo ? buckets[0] : buckets[buckets.length - 1];
    let emptied = 0;
    for (const bucket of buckets) {
      const path = `${container}/${bucket}`;
      const { names } = await list(path, laneList.read);
      if (names.length === 0) {
        if (bucket !== tail || lane !== PLAIN_LANE) {
          void removeIfEmpty(store, path).catch(() => undefined);
          emptied++;
        }
        continue;
      }
      for (const name of sortBySequence(names, undefined, lifo)) {
        const id = idOfPointer(name);
        if (o.exclude.has(id)) continue;
        out.push({ id, pointer: `${path}/${name}`, lane });
        if (out.length >= o.limit) return out;
      }
    }
    if (emptied === buckets.length && lane !== PLAIN_LANE) void removeIfEmpty(store, container).catch(() => undefined);
  }
  return out;
}

/** Most listings a look ahead reads in its one request (bounded: each is at most a bucket). */
export const AHEAD_LISTINGS = 6;

/** A scan of the head with the claims, and the listings to read ahead next time. */
export interface HeadLook {
  candidates: Candidate[];
  /** Every listing this scan made (pass them back as `ahead`). */
  listed: string[];
}

/**
 * Scans the head, leaving out the jobs claimed now, with the listings of the
 * previous scan (`ahead`) read in the same request as the claims (one
 * read-only multi): the head's shape (lanes, buckets) rarely changes between
 * two looks, so one round trip replaces a chain of them; only a listing the
 * previous scan did not make (a new lane or bucket) is read after it. A
 * listing read ahead is as good as one read during the walk: every claim is
 * fenced by its own transaction (the pointer checked, the claim created).
 */
export async function lookAtHead(
  store: QueueStore,
  o: { limit: number; exclude: Iterable<string>; ahead?: readonly string[] },
): Promise<HeadLook> {
  const { claimsDir } = store.layout;
  const paths = [claimsDir, ...(o.ahead ?? []).filter((p) => p !== claimsDir).slice(0, AHEAD_LISTINGS)];
  const replies = await store.session.readMulti(paths.map((path) => ({ op: 'getChildren' as const, path })));
  const read = new Map<string, string[]>();
  replies.forEach((r, i) => {
    const path = paths[i] as string;
    if (r.ok) read.set(path, r.children);
    else if (r.error instanceof NoNodeError) read.set(path, []);
    else throw r.error;
  });
  const exclude = new Set([...(read.get(claimsDir) ?? []), ...o.exclude]);
  const listed: string[] = [];
  const candidates = await scanHead(store, { limit: o.limit, exclude, read, listed });
  return { candidates, listed };
}

/**
 * Deletes a ready pointer whose record is gone, only while it still is, or
 * (`recordVersion`) one left beside a record no ready pointer goes with, only
 * while that record is at that version (see orphanPointerOps). Resolves 'dropped'; 'job' when a record is there (work
 * to do); 'gone' when the pointer went meanwhile (or the record's shard).
 */
export async function dropOrphanPointer(
  store: QueueStore,
  c: Candidate,
  recordVersion?: number,
): Promise<'dropped' | 'job' | 'gone'> {
  const ops = orphanPointerOps(store.layout, c, recordVersion);
  // safe to send twice: once applied, the pointer's delete fails and nothing is applied again
  const [result] = await store.executor.run([{ build: () => ({ ops }) }], { receipt: false });
  if (result?.ok) return 'dropped';
  if (!result || result.ok) return 'gone';
  // a record there (or, for a left-behind pointer, its record changed or gone): look at it again
  const atRecord = result.op?.path === store.layout.job(c.id);
  return result.error instanceof NodeExistsError || atRecord ? 'job' : 'gone';
}

// ---- walks of containers ----------------------------------------------------

/** A job found through its pointer. */
export interface Located {
  id: string;
  pointer: string;
}

/** The pointers of a container, bucket by bucket, in `chunk`-sized lists. */
export async function* pointersIn(
  store: QueueStore,
  container: string,
  chunk: number,
  order: 'sequence' | 'reverse' | 'due' = 'sequence',
): AsyncGenerator<Located[]> {
  for (const bucket of await bucketsOf(store, container, undefined, order === 'reverse')) {
    const dir = `${container}/${bucket}`;
    const names = await store.children(dir);
    const sorted =
      order === 'due'
        ? names.sort((a, b) => dueOfDelayed(a) - dueOfDelayed(b))
        : sortBySequence(names, undefined, order === 'reverse');
    const idOf = order === 'due' ? idOfDelayed : idOfPointer;
    for (let i = 0; i < sorted.length; i += chunk) {
      yield sorted.slice(i, i + chunk).map((n) => ({ id: idOf(n), pointer: `${dir}/${n}` }));
    }
  }
}

/** The hour containers of delayed jobs, earliest first. */
export async function delayedHours(store: QueueStore): Promise<string[]> {
  const { layout } = store;
  const out: string[] = [];
  for (const day of (await store.children(layout.delayedDir)).sort()) {
    const dir = `${layout.delayedDir}/${day}`;
    for (const hour of (await store.children(dir)).sort()) out.push(`${dir}/${hour}`);
  }
  return out;
}

/** Ready pointers of the lanes `laneFilter` accepts, in serving order. */
export async function* readyPointers(
  store: QueueStore,
  laneFilter: (lane: string) => boolean,
  chunk: number,
): AsyncGenerator<Located[]> {
  for (const lane of sortLanes(await store.children(store.layout.ready))) {
    if (!laneFilter(lane)) continue;
    yield* pointersIn(store, store.layout.lane(lane), chunk, lane === LIFO_LANE ? 'reverse' : 'sequence');
  }
}

/** Delayed pointers, earliest hour first, by due time inside a bucket. */
export async function* delayedPointers(store: QueueStore, chunk: number): AsyncGenerator<Located[]> {
  for (const hour of await delayedHours(store)) yield* pointersIn(store, hour, chunk, 'due');
}

// ---- moves ------------------------------------------------------------------

/** One job's move: its ops (built again when a bucket went missing) and events. */
export interface Move extends TxUnit {
  id: string;
}

/**
 * Writes moves, as few transactions as fit; a job whose op conflicts (it
 * changed meanwhile) is left alone, unless `again` offers a move to try
 * instead. Resolves with the ids moved. `fence` makes a deposed leader's
 * moves fail with FencedError.
 */
export async function applyMoves(
  store: QueueStore,
  moves: Move[],
  fence?: () => ProtocolOp[],
  again?: (move: Move, op: ProtocolOp) => Move | undefined,
): Promise<string[]> {
  if (moves.length === 0) return [];
  const results: UnitResult[] = await store.executor.run(moves, {
    receipt: false,
    ...(fence ? { fence } : {}),
    ...(again ? { onConflict: (move: Move, _err: unknown, op: ProtocolOp) => again(move, op) } : {}),
  });
  return moves.filter((_, i) => results[i]?.ok).map((m) => m.id);
}

/** The record of a job moved back to waiting by a promotion, due or by hand: no due time, no delay left (BullMQ's). */
export function promotedRecord(r: JobRecord): JobRecord {
  return { ...r, state: 'waiting', due: undefined, delay: 0 };
}

/** A move of `stored` to the ready lane its record names, from `from` (its old pointer). */
export function toReady(
  store: QueueStore,
  stored: StoredJob,
  record: JobRecord,
  from: string | undefined,
  events: QueueEventRecord[],
): Move {
  return moveTo(store, stored, record, from, { kind: 'ready', lane: record.lane ?? PLAIN_LANE }, events);
}

/** A move of `stored`, a delayed job, to its new due time `record.due`, from `from` (its old pointer). */
export function toDelayed(
  store: QueueStore,
  stored: StoredJob,
  record: JobRecord & { due: number },
  from: string | undefined,
  events: QueueEventRecord[],
): Move {
  return moveTo(store, stored, record, from, { kind: 'delayed', due: record.due }, events);
}

/** The record at the version read, its old pointer deleted, its new one in `place`; a ready place wakes a worker. */
function moveTo(
  store: QueueStore,
  stored: StoredJob,
  record: JobRecord,
  from: string | undefined,
  place: Place,
  events: QueueEventRecord[],
): Move {
  const id = record.id;
  const data = encodeRecord(record);
  return {
    id,
    build: async () => ({
      ops: moveOps(store.layout, { id, version: stored.version, record: data, from }, await store.destination(place)),
      events,
      wakes: place.kind === 'ready',
    }),
  };
}

/** A move that rewrites the record of a job that is not active where it is (at the version read). */
export function rewrite(
  store: QueueStore,
  stored: StoredJob,
  record: JobRecord,
  events: QueueEventRecord[] = [],
): Move {
  const ops = rewriteOps(store.layout, { id: record.id, version: stored.version, record: encodeRecord(record) });
  return { id: record.id, build: () => ({ ops, events }) };
}

/**
 * Logs `events` in a node of their own, whether anyone listens or not (events
 * a client publishes, which a reader may ask for later). Resolves with the
 * node's path, or undefined when a lost reply was settled by the receipt.
 */
export async function logEvents(store: QueueStore, events: QueueEventRecord[]): Promise<string | undefined> {
  const unit = { build: () => ({ ops: [eventOp(store.layout, events)] }) };
  for (let attempt = 0; ; attempt++) {
    const [result] = await store.executor.run([unit]);
    if (result?.ok) return (result.results?.[0] as { path?: string } | undefined)?.path;
    // the log's directory is gone (an obliterated queue): make it again, once
    if (attempt > 0 || !(result?.error instanceof NoNodeError)) throw result?.error;
    store.containers.forget(store.layout.eventLog);
    await store.ensureDir(store.layout.eventLog);
  }
}

/**
 * A move that deletes a job (when its record is readable, at the version
 * read) and its pointer; `also`: ops of the same removal (the delete of the
 * job's deduplication key, at the version read).
 */
export function removal(
  store: QueueStore,
  r: { id: string; version: number | undefined; pointer: string | undefined },
  events: QueueEventRecord[],
  also: ProtocolOp[] = [],
  /** The removal releases a parent into waiting in this queue. */
  wakes = false,
): Move {
  const ops = [...removeOps(store.layout, r), ...also];
  return { id: r.id, build: () => ({ ops, events, wakes }) };
}

// ---- promotion (any worker) -------------------------------------------------

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
  store: QueueStore,
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
async function promotions(store: QueueStore, pointers: string[], unread: unknown[]): Promise<Move[]> {
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

// ---- retention --------------------------------------------------------------

/**
 * Deletes the oldest finished jobs of `kind` beyond `keep`; resolves with the
 * removed ids. Empty buckets but the tail are removed on the way.
 */
export async function trimFinished(store: QueueStore, kind: 'completed' | 'failed', keep: KeepJobs): Promise<string[]> {
  const { session, layout } = store;
  const container = layout.finishedDir(kind);
  const buckets = await bucketsOf(store, container);
  const stats = await Promise.all(buckets.map((b) => session.exists(`${container}/${b}`)));
  const total = stats.reduce((n, s) => n + (s?.numChildren ?? 0), 0);
  let excess = keep.count !== undefined ? Math.max(0, total - keep.count) : 0;
  const cutoff = keep.age !== undefined ? Date.now() - keep.age * 1000 : undefined;
  const limit = keep.limit ?? Number.POSITIVE_INFINITY;
  const victims: Located[] = [];
  outer: for (const [i, bucket] of buckets.entries()) {
    const dir = `${container}/${bucket}`;
    const names = sortBySequence(await store.children(dir));
    if (names.length === 0 && i < buckets.length - 1) await removeIfEmpty(store, dir);
    for (const name of names) {
      if (victims.length >= limit) break outer;
      const located = { id: idOfPointer(name), pointer: `${dir}/${name}` };
      if (excess > 0) {
        excess--;
        victims.push(located);
        continue;
      }
      if (cutoff === undefined) break outer;
      const job = await store.getJob(located.id);
      if (job && (job.record.finishedOn ?? 0) >= cutoff) break outer;
      victims.push(located);
    }
  }
  return applyMoves(store, await trimMoves(store, kind, victims));
}

/**
 * The moves that trim `victims`. A failed child with no failure policy is
 * still pending for its parent: it leaves the parent's dependencies in the
 * transaction that trims it (the last one releases the parent). So failed
 * jobs are read, inside their units (role `reread`: siblings trimmed
 * together each read the parent's node again), and only in a queue that
 * ever got a child of a flow.
 */
async function trimMoves(store: QueueStore, kind: 'completed' | 'failed', victims: Located[]): Promise<Move[]> {
  // each trim rewrites the set's node (the finishes' remembered counts are read again)
  const ops = (v: Located) => [...trimOps(store.layout, v), ...leaveSetOps(store.layout, v.pointer)];
  const plain = (v: Located): Move => ({ id: v.id, build: () => ({ ops: ops(v) }) });
  if (kind !== 'failed' || victims.length === 0) return victims.map(plain);
  if (!(await store.session.exists(store.layout.flowChildren))) return victims.map(plain);
  return victims.map((v) => ({
    id: v.id,
    build: async () => {
      const stored = await store.getJob(v.id).catch(() => undefined);
      const detach =
        stored && mayBePendingChild(stored.record) && (await detachOps(store, stored.record, { reread: true }));
      return joinBuilt({ ops: ops(v) }, detach || undefined);
    },
  }));
}

// ---- receipts ---------------------------------------------------------------

/** Sweeps a receipt must have survived before it is taken as left behind by a dead client. */
export const RECEIPT_SWEEPS_KEPT = 10;

/**
 * Deletes receipts that earlier sweeps already saw RECEIPT_SWEEPS_KEPT
 * sweeps ago (the leader sweeps every minute: ten minutes, far longer than
 * any client takes to read back its own). `seen` carries what earlier
 * sweeps saw; `sweep` numbers this one.
 */
export async function sweepReceipts(store: QueueStore, seen: Map<string, number>, sweep: number): Promise<number> {
  const names = await store.children(store.layout.receiptsDir);
  const live = new Set(names);
  for (const name of seen.keys()) if (!live.has(name)) seen.delete(name);
  const old: string[] = [];
  for (const name of names) {
    const first = seen.get(name);
    if (first === undefined) seen.set(name, sweep);
    else if (sweep - first >= RECEIPT_SWEEPS_KEPT) old.push(name);
  }
  const moves: Move[] = old.map((name) => ({
    id: name,
    build: () => ({ ops: [{ op: 'delete', path: store.layout.receipt(name) }] }),
  }));
  const done = await applyMoves(store, moves);
  for (const name of done) seen.delete(name);
  return done.length;
}
