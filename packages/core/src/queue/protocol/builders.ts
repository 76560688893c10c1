/**
 * Op builders shared by several transitions, pure: a job's pointer and its
 * moves, adds, removals and trims, deduplication keys, the limits' checks.
 * The ops of an attempt are built in its transition files (claimOps in
 * claim.ts, renewOps and reclaimOps in lease.ts, finishOps and releaseOps in
 * finish.ts, revokeOps in stale.ts).
 *
 * Each returns the ops of ONE job's share of a transaction, in a fixed order
 * that the callers' conflict handling relies on (test/unit/protocol-builders
 * pins it). The first op of a change made by an attempt or a reader is the
 * one that fences it: the record written at the version that was read (the
 * attempt's token), or a check of it.
 */
import type { QueueEventRecord } from '../event-record.js';
import { pad10, type QueueLayout } from '../layout.js';
import type { ProtocolOp } from './units.js';

const EMPTY = Buffer.alloc(0);

/** A place to send a job, before Containers picked its bucket. */
export type Place =
  | { kind: 'ready'; lane: string }
  | { kind: 'delayed'; due: number }
  | { kind: 'completed' | 'failed' }
  | { kind: 'waiting-children' };

/** Where a job's new pointer goes: a bucket path chosen by Containers, and the kind of pointer. */
export type Destination =
  | { kind: 'ready'; bucket: string }
  | { kind: 'delayed'; bucket: string; due: number }
  | { kind: 'completed' | 'failed'; bucket: string }
  | { kind: 'waiting-children'; bucket: string; stamp: number };

/**
 * The path of a waiting-children pointer `w-<id>-<10 digits>`: not
 * sequential (the parent's record names it, so it is known before the
 * write); its number, the second it parked, orders listings as a sequence does.
 */
export function parkedPath(id: string, to: { bucket: string; stamp: number }): string {
  return `${to.bucket}/w-${id}-${pad10(to.stamp)}`;
}

/** The create of a job's pointer at `to` (role `into`: its bucket may have been removed). */
export function pointerOp(layout: QueueLayout, id: string, to: Destination): ProtocolOp {
  switch (to.kind) {
    case 'ready':
      return {
        op: 'create',
        path: layout.readyPointerPrefix(to.bucket, id),
        mode: 'persistent_sequential',
        role: 'into',
      };
    case 'delayed':
      return { op: 'create', path: `${to.bucket}/${layout.delayedName(to.due, id)}`, role: 'into' };
    case 'waiting-children':
      return { op: 'create', path: parkedPath(id, to), role: 'into' };
    default:
      return {
        op: 'create',
        path: layout.finishedPointerPrefix(to.kind, to.bucket, id),
        mode: 'persistent_sequential',
        role: 'into',
      };
  }
}

/**
 * Enqueue: create the record (fails if the id exists: de-duplication by id),
 * then, with deduplication, the key naming it (`dedupKeyOp`: its create
 * fails if the key exists), then the pointer. The record comes first, as in
 * BullMQ: an existing custom id answers before a deduplication key does.
 */
export function enqueueOps(
  layout: QueueLayout,
  id: string,
  record: Buffer,
  to: Destination,
  key?: ProtocolOp,
): ProtocolOp[] {
  const ops: ProtocolOp[] = [{ op: 'create', path: layout.job(id), data: record }];
  if (key) ops.push(key);
  ops.push(pointerOp(layout, id, to));
  return ops;
}

/**
 * A deduplication key written with a job: created (role `into`: its shard
 * directory is made on first use, and may be gone with an obliterated
 * queue), or, when a stale key was read at `version`, rewritten at it.
 */
export function dedupKeyOp(layout: QueueLayout, k: { id: string; data: Buffer; version?: number }): ProtocolOp {
  const path = layout.dedupKey(k.id);
  return k.version === undefined
    ? { op: 'create', path, data: k.data, role: 'into' }
    : { op: 'setData', path, data: k.data, version: k.version };
}

/** Delete a deduplication key: at the version read, or whatever it holds (`Queue.removeDeduplicationKey`). */
export function dedupDeleteOp(layout: QueueLayout, k: { id: string; version?: number }): ProtocolOp {
  const path = layout.dedupKey(k.id);
  return k.version === undefined ? { op: 'delete', path } : { op: 'delete', path, version: k.version };
}

/**
 * The job a deduplication key names still exists (at `version`, or any):
 * a write planned from a read of the key also checks its job, since the
 * job's removal deletes the key, and a newer add may create it again at the
 * version read (dedup.ts).
 */
export function keptJobCheckOp(layout: QueueLayout, id: string, version = -1): ProtocolOp {
  return { op: 'check', path: layout.job(id), version };
}

/**
 * The sweep's generation of deduplication keys (the version of `dedup/`):
 * every delete of a key by the sweep (or by hand) bumps it, and a write
 * planned from a key read after it checks it, since a key deleted and
 * created again starts again at the version read (dedup.ts).
 */
export function dedupGenerationCheckOp(layout: QueueLayout, version: number): ProtocolOp {
  return { op: 'check', path: layout.dedupDir, version };
}

/** Bumps the generation of deduplication keys, with a delete that no job's removal or finish fences. */
export function dedupGenerationBumpOp(layout: QueueLayout): ProtocolOp {
  return { op: 'setData', path: layout.dedupDir, data: EMPTY };
}

/**
 * Park a duplicate of an active job in its key (keepLastIfActive): the key
 * rewritten at the version read, and only while the kept job's claim is
 * there. Its finish rewrites the key too, so the two never miss each other.
 */
export function parkOps(
  layout: QueueLayout,
  p: { id: string; data: Buffer; version: number; kept: string },
): ProtocolOp[] {
  return [
    { op: 'setData', path: layout.dedupKey(p.id), data: p.data, version: p.version },
    { op: 'check', path: layout.claim(p.kept), version: -1 },
  ];
}

/**
 * No claim of job `id` is there: ZooKeeper has no check of absence, so the
 * claim's path is created and deleted again in the same transaction (the
 * create fails with NodeExists while a worker holds the job). A claim writes
 * no record, so a change of a waiting job fenced by its record's version
 * alone would not see a claim made since it was read.
 */
export function unclaimedOps(layout: QueueLayout, id: string): ProtocolOp[] {
  const claim = layout.claim(id);
  return [
    { op: 'create', path: claim },
    { op: 'delete', path: claim },
  ];
}

/**
 * Move a job that is not active (promote, retry, re-queue, quarantine): the
 * record at the version read, the old pointer deleted (a ready one only
 * while no claim is there; at `fromVersion` when given: the claims of it
 * the record counts), the new one created.
 */
export function moveOps(
  layout: QueueLayout,
  m: { id: string; version: number; record: Buffer; from: string | undefined; fromVersion?: number | undefined },
  to: Destination,
): ProtocolOp[] {
  const ops: ProtocolOp[] = [{ op: 'setData', path: layout.job(m.id), data: m.record, version: m.version }];
  if (m.from) {
    if (layout.isReadyPointer(m.from)) ops.push(...unclaimedOps(layout, m.id));
    const at = m.fromVersion === undefined ? {} : { version: m.fromVersion };
    ops.push({ op: 'delete', path: m.from, ...at }, ...leaveSetOps(layout, m.from));
  }
  ops.push(pointerOp(layout, m.id, to));
  return ops;
}

/**
 * Rewrite the record of a job that is not active where it is (data, logs,
 * priority of a delayed or finished job): at the version read, and only
 * while no claim is there, so a job claimed or moved meanwhile is left
 * alone. Its pointer stays.
 */
export function rewriteOps(layout: QueueLayout, r: { id: string; version: number; record: Buffer }): ProtocolOp[] {
  return [{ op: 'setData', path: layout.job(r.id), data: r.record, version: r.version }, ...unclaimedOps(layout, r.id)];
}

/** The event log node holding `events` (a JSON array), next in sequence. */
export function eventOp(layout: QueueLayout, events: readonly QueueEventRecord[]): ProtocolOp {
  return {
    op: 'create',
    path: layout.eventPrefix(),
    data: Buffer.from(JSON.stringify(events)),
    mode: 'persistent_sequential',
  };
}

/**
 * Remove a job that is not active: the record at the version read (when
 * readable), and its pointer (a ready one only while no claim is there).
 */
export function removeOps(
  layout: QueueLayout,
  r: { id: string; version: number | undefined; pointer: string | undefined },
): ProtocolOp[] {
  const ops: ProtocolOp[] = [];
  if (r.version !== undefined) ops.push({ op: 'delete', path: layout.job(r.id), version: r.version });
  if (r.pointer) {
    if (layout.isReadyPointer(r.pointer)) ops.push(...unclaimedOps(layout, r.id));
    ops.push({ op: 'delete', path: r.pointer }, ...leaveSetOps(layout, r.pointer));
  }
  return ops;
}

/**
 * A pointer deleted out of a finished set other than by a finish's own trim
 * (remove, retry, clean, the Trimmer) rewrites the set's node, as a `touch`
 * does: the finishes that plan trims from a remembered count (trims.ts) then
 * fail their check of its version and count the set again, instead of
 * trimming a job the bound keeps.
 */
export function leaveSetOps(layout: QueueLayout, pointer: string): ProtocolOp[] {
  const set = layout.finishedSetOf(pointer);
  return set ? [fillOp(layout, set, { kind: 'touch' })] : [];
}

/**
 * Trim a finished job (retention): its finished pointer first, which fences
 * the record (a job retried since has lost that pointer in the same
 * transaction that rewrote its record), then the record.
 */
export function trimOps(layout: QueueLayout, t: { id: string; pointer: string }): ProtocolOp[] {
  return [
    { op: 'delete', path: t.pointer },
    { op: 'delete', path: layout.job(t.id) },
  ];
}

/**
 * How a finish that sends its job to a finished set treats that set's node
 * (`completed` or `failed`), whose data version counts the pointers added
 * there without a trim beside them (see trims.ts): `grow` rewrites it at the
 * version its count was read at (an add below the bound), `check` checks that
 * version (an add that trims as many as it adds), `touch` rewrites it
 * whatever it is (an add with no count bound). Role `trim`: a `grow` or
 * `check` that fails means the count read is stale.
 */
export type FillWrite = { kind: 'grow' | 'check'; version: number } | { kind: 'touch' };

export function fillOp(layout: QueueLayout, set: 'completed' | 'failed', w: FillWrite): ProtocolOp {
  const path = layout.finishedDir(set);
  if (w.kind === 'touch') return { op: 'setData', path, data: EMPTY };
  if (w.kind === 'check') return { op: 'check', path, version: w.version, role: 'trim' };
  return { op: 'setData', path, data: EMPTY, version: w.version, role: 'trim' };
}

/**
 * A write of the rate-limit window (see limits.ts). Its two nodes are never
 * deleted, so a version seen once is never seen again. `open` creates them
 * (no window yet), `count` counts into the live window (its node checked at
 * the version read, the count written at its own), `reopen` opens the next
 * window (the window node rewritten at the version read: its mtime, the new
 * start, is the commit's time), `set` opens a window whatever is there (a
 * manual window, or its end).
 */
export type WindowWrite =
  | { kind: 'open'; window: Buffer; count: Buffer }
  | { kind: 'count'; version: number; countVersion: number; count: Buffer }
  | { kind: 'reopen'; version: number; countVersion: number; window: Buffer; count: Buffer }
  | { kind: 'set'; window: Buffer; count: Buffer };

/** The ops of a window write; all but `set` fail when another writer changed the window since it was read. */
export function windowOps(layout: QueueLayout, w: WindowWrite): ProtocolOp[] {
  switch (w.kind) {
    case 'open':
      return [
        { op: 'create', path: layout.limiter, data: w.window },
        { op: 'create', path: layout.limiterCount, data: w.count },
      ];
    case 'count':
      return [
        { op: 'check', path: layout.limiter, version: w.version },
        { op: 'setData', path: layout.limiterCount, data: w.count, version: w.countVersion },
      ];
    case 'reopen':
      return [
        { op: 'setData', path: layout.limiter, data: w.window, version: w.version },
        { op: 'setData', path: layout.limiterCount, data: w.count, version: w.countVersion },
      ];
    default:
      return [
        { op: 'setData', path: layout.limiter, data: w.window },
        { op: 'setData', path: layout.limiterCount, data: w.count },
      ];
  }
}

/** The queue settings are still at the version a limited claim was decided on. */
export function settingsCheckOp(layout: QueueLayout, version: number): ProtocolOp {
  return { op: 'check', path: layout.settings, version };
}

/**
 * A claim transaction's check of the queue's `meta` node (the pause flag) at
 * the version the flag was read unset: a pause that committed first fails
 * the claim. One per transaction, whatever the number of jobs it claims.
 */
export function pauseCheckOp(layout: QueueLayout, version: number): ProtocolOp {
  return { op: 'check', path: layout.meta, version };
}

/**
 * Drop a ready pointer left without its record, only while it still is:
 * ZooKeeper has no check of absence, so the record's path is created and
 * deleted again in the same transaction (the create fails when a record is
 * there, e.g. a job added again under its id, whose own pointer is another
 * node anyway), then the pointer is deleted. With `recordVersion`, the
 * pointer's record is there in a state no ready pointer goes with, and the
 * pointer is dropped only while the record is still at that version.
 */
export function orphanPointerOps(
  layout: QueueLayout,
  o: { id: string; pointer: string },
  recordVersion?: number,
): ProtocolOp[] {
  const record = layout.job(o.id);
  // a record a ready pointer never goes with (see ClaimResult.skipped): only while it is still there at that version
  if (recordVersion !== undefined) {
    return [
      { op: 'check', path: record, version: recordVersion },
      { op: 'delete', path: o.pointer },
    ];
  }
  return [
    { op: 'create', path: record },
    { op: 'delete', path: record },
    { op: 'delete', path: o.pointer },
  ];
}
