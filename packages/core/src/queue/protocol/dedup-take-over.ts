/**
 * Adding jobs with deduplication (dedup-keys.ts says what a key is and when
 * it is live). An add whose key does not exist costs nothing extra: the key's
 * create rides in the job's enqueue transaction and is its test-and-set.
 * Only an add that meets a key reads: the key, its job (and whether that
 * job runs, for keepLastIfActive) and, for a ttl key, ZooKeeper's clock.
 * `decide` (pure) picks what to do, and the write is made at the versions
 * read; one that lost a race is planned again. All of it happens in the
 * run the add's enqueue was sent in, at its place: pipelined adds called
 * after it are stored after it.
 */
import { NodeExistsError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../event-record.js';
import type { QueueLayout } from '../layout.js';
import { MAX_DELAY_MS } from '../options.js';
import { encodeRecord, type JobRecord } from '../record.js';
import type { DeduplicationOptions } from '../types.js';
import { addedBuilt, type EnqueueEntry } from './add.js';
import type { EnqueueUnit } from './add-batch.js';
import { dedupGenerationCheckOp, dedupKeyOp, keptJobCheckOp, moveOps, parkOps, removeOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import { DEDUP_ROUNDS, dedupEvent, dedupOf, encodeKey, keyTtl, look, type Seen } from './dedup-keys.js';
import { findPointer } from './job-reads.js';
import type { Built, ProtocolOp } from './units.js';

/** What became of one entry: added, an existing custom id, or deduplicated to a kept job. */
export interface AddOutcome {
  /** The job's id (the existing job's, the kept job's). */
  id: string;
  kind: 'added' | 'existing' | 'deduplicated';
}

/** What an add that met a live or stale key does. */
export type DedupAction =
  /** The key is missing or stale: add the job; the key (created, or rewritten at the version read) names it. */
  | { kind: 'take'; ttl: number | undefined }
  /** `replace`, and the kept job is still delayed: it is removed and the new job added in its place. */
  | { kind: 'replace'; ttl: number | undefined }
  /** `keepLastIfActive`, and the kept job runs: the new job waits in the key until it finishes. */
  | { kind: 'park' }
  /**
   * The kept job stays: `event` logs `deduplicated` (BullMQ logs none when a
   * `replace` finds nothing to replace); `rewrite` (extend) writes the key
   * again with `ttl`; `reschedule` moves the delayed kept job.
   */
  | { kind: 'keep'; event: boolean; rewrite: { ttl: number | undefined } | undefined; reschedule: boolean };

/** What an add with options `o` does, given what it saw of the key (pure: BullMQ's deduplicateJob). */
export function decide(o: DeduplicationOptions, seen: Seen): DedupAction {
  if (!seen.live || !seen.read) return { kind: 'take', ttl: keyTtl(o) };
  const kept = seen.kept?.record;
  // only a kept job added with keepLastIfActive adds the parked one when it finishes
  const parks = o.keepLastIfActive === true && seen.active && kept?.opts.deduplication?.keepLastIfActive === true;
  if (o.replace) {
    if (kept?.state === 'delayed' && !seen.active) return { kind: 'replace', ttl: replaceTtl(o, seen) };
    return parks ? { kind: 'park' } : { kind: 'keep', event: false, rewrite: undefined, reschedule: false };
  }
  if (parks) return { kind: 'park' };
  const rewrite = o.extend && o.ttl !== undefined ? { ttl: keyTtl(o) } : undefined;
  return { kind: 'keep', event: true, rewrite, reschedule: o.reschedule === true && kept?.state === 'delayed' };
}

/** The ttl of the key after a replace: without `extend`, what was left of the kept key's (BullMQ's KEEPTTL). */
function replaceTtl(o: DeduplicationOptions, seen: Seen): number | undefined {
  if (o.keepLastIfActive || o.extend || o.ttl === undefined) return keyTtl(o);
  const read = seen.read;
  if (read?.key.ttl === undefined) return undefined;
  return Math.max(1, read.key.ttl - ((seen.now ?? read.mtime) - read.mtime));
}

/**
 * The unit an entry whose key exists is sent as instead of its enqueue: it
 * reads the key once every unit before it in the run is settled
 * (`seesEarlier`: an earlier add may have just taken the same key), decides,
 * and writes at the versions read; `done` hears the outcome once that write
 * went through. A write that lost a race offers the unit of the next round.
 * A custom id that exists fails it (the entry reads as existing, as in BullMQ).
 */
export function againstKey(
  store: ProtocolContext,
  entry: EnqueueEntry,
  done: (outcome: AddOutcome) => void,
  round = 1,
): EnqueueUnit {
  const o = dedupOf(entry.record) as DeduplicationOptions;
  const record: JobRecord = { ...entry.record, lane: entry.lane };
  let looked: { seen: Seen; action: DedupAction } | undefined;
  return {
    seesEarlier: true,
    // built again (a fresh bucket) when the executor finds a pointer's bucket removed meanwhile: same reads
    build: async () => {
      if (!looked) {
        const seen = await look(store, o.id, o.keepLastIfActive === true);
        looked = { seen, action: decide(o, seen) };
      }
      return plan(store, o, record, looked.seen, looked.action);
    },
    settled: (result) => {
      if (!result.ok || !looked) return;
      const { seen, action } = looked;
      const kind = action.kind === 'take' || action.kind === 'replace' ? 'added' : 'deduplicated';
      done(kind === 'added' ? { id: record.id, kind } : { id: seen.read?.key.job ?? '', kind });
    },
    onConflict: (error, op) => {
      if (error instanceof NodeExistsError && op.path === store.layout.job(record.id)) return undefined;
      return round < DEDUP_ROUNDS ? againstKey(store, entry, done, round + 1) : undefined;
    },
  };
}

/**
 * What a write to a key read in `seen` also checks: the key's job still
 * exists (its removal deletes the key), and no key was deleted by the sweep
 * or by hand since (either may let a newer add create the key again at the
 * version read).
 */
function fences(layout: QueueLayout, seen: Seen): ProtocolOp[] {
  if (!seen.read) return [];
  return [...(seen.kept ? [keptJobCheckOp(layout, seen.kept.record.id)] : []), ...generation(layout, seen)];
}

/** The check of the generation of keys read with `seen` (a replace or a park is fenced on the kept job already). */
function generation(layout: QueueLayout, seen: Seen): ProtocolOp[] {
  return seen.read && seen.generation !== undefined ? [dedupGenerationCheckOp(layout, seen.generation)] : [];
}

/** The ops and events of `action` (their reads made now; the write comes next). */
async function plan(
  store: ProtocolContext,
  o: DeduplicationOptions,
  record: JobRecord,
  seen: Seen,
  action: DedupAction,
): Promise<Built> {
  const { layout } = store;
  const read = seen.read;
  const kept = seen.kept;
  const add = async (key: ProtocolOp, events: QueueEventRecord[]): Promise<Built> => {
    const built = await addedBuilt(store, record, encodeRecord(record), key);
    return { ...built, events: [...events, ...(built.events ?? [])] };
  };
  switch (action.kind) {
    case 'take': {
      const data = encodeKey(action.ttl === undefined ? { job: record.id } : { job: record.id, ttl: action.ttl });
      if (!read) await store.ensureDir(layout.dedupShard(o.id));
      const taken = await add(dedupKeyOp(layout, { id: o.id, data, version: read?.version }), []);
      return { ...taken, ops: [...taken.ops, ...fences(layout, seen)] };
    }
    case 'replace': {
      if (!read || !kept) throw new Error('unreachable: replace without a kept job');
      const data = encodeKey(action.ttl === undefined ? { job: record.id } : { job: record.id, ttl: action.ttl });
      const pointer = await findPointer(store, kept.record);
      const removed = removeOps(layout, { id: kept.record.id, version: kept.version, pointer });
      const events = [
        { event: 'removed', jobId: kept.record.id, prev: 'delayed', ts: Date.now() },
        dedupEvent(record.id, o.id, kept.record.id),
      ];
      const built = await add(dedupKeyOp(layout, { id: o.id, data, version: read.version }), events);
      return { ...built, ops: [...built.ops, ...removed, ...generation(layout, seen)] };
    }
    case 'park': {
      if (!read) throw new Error('unreachable: park without a key');
      const data = encodeKey({ job: read.key.job, next: record });
      const ops = [
        ...parkOps(layout, { id: o.id, data, version: read.version, kept: read.key.job }),
        ...generation(layout, seen),
      ];
      return { ops, events: [dedupEvent(read.key.job, o.id, record.id)] };
    }
    case 'keep': {
      if (!read) throw new Error('unreachable: keep without a key');
      const ops: ProtocolOp[] = [];
      const events = action.event ? [dedupEvent(read.key.job, o.id, record.id)] : [];
      if (action.rewrite) {
        const data = encodeKey({ ...read.key, ttl: action.rewrite.ttl });
        ops.push(dedupKeyOp(layout, { id: o.id, data, version: read.version }), ...fences(layout, seen));
      }
      if (action.reschedule && kept) {
        // BullMQ's reschedule: the kept job's new due time is the duplicate's delay from its timestamp
        const delay = Math.min(Math.max(record.delay ?? 0, 0), MAX_DELAY_MS);
        const due = store.clock.fromLocal(record.timestamp + delay);
        const moved: JobRecord = { ...kept.record, delay, due, state: 'delayed' };
        const pointer = await findPointer(store, kept.record);
        const to = await store.destination({ kind: 'delayed', due });
        const data = encodeRecord(moved);
        ops.push(...moveOps(layout, { id: moved.id, version: kept.version, record: data, from: pointer }, to));
        events.push({ event: 'delayed', jobId: moved.id, delay: due, ts: Date.now() });
      }
      return { ops, events };
    }
  }
}
