/**
 * The finish of a job added with deduplication: the key goes, or is handed
 * on to the job parked in it (keepLastIfActive), in the finish transaction
 * (dedup-keys.ts says what a key is).
 */
import { NodeExistsError } from '../../zk/errors.js';
import { laneOf, type QueueLayout } from '../layout.js';
import { MAX_DELAY_MS } from '../options.js';
import { encodeRecord, type JobRecord } from '../record.js';
import type { DeduplicationOptions } from '../types.js';
import { addedBuilt } from './add.js';
import { dedupDeleteOp, dedupGenerationCheckOp, dedupKeyOp } from './builders.js';
import type { ProtocolContext } from './context.js';
import { DEDUP_ROUNDS, dedupOf, encodeKey, readKey } from './dedup-keys.js';
import type { Built, ProtocolOp } from './units.js';

/** What a finish does with its job's key: add the parked job, only release the key, or leave it. */
export type HandoffMode = 'next' | 'release' | 'none';

/**
 * Whether a final finish of `record` reads its key: a key without ttl may
 * name it. A job added with a ttl (and without keepLastIfActive) never has
 * one: its key, while it names the job, carries a ttl and runs out by itself.
 */
function finishReadsKey(o: DeduplicationOptions): boolean {
  return o.keepLastIfActive === true || o.ttl === undefined;
}

/**
 * A final finish (completed or failed, not a retry) of a job added with
 * deduplication: when its key still names it and has no ttl, the key is
 * deleted, or, with a job parked by keepLastIfActive, rewritten to keep
 * that job, which is added; all at the key's version read and in the
 * finish transaction (`built`'s). A key changed meanwhile (a park, a
 * removal) plans the finish again (`handoffAfterConflict`). A key that
 * names another job, or carries a ttl, is left alone; any other finish is
 * returned as is, unread.
 */
export async function withHandoff(
  store: ProtocolContext,
  record: JobRecord,
  built: Built,
  mode: HandoffMode,
): Promise<Built> {
  const o = dedupOf(record);
  if (!o || !finishReadsKey(o) || mode === 'none') return built;
  const { layout } = store;
  // a key freed by hand meanwhile and created again by a newer add may be at the version read
  const [dir, read] = await Promise.all([store.session.exists(layout.dedupDir), readKey(store, o.id)]);
  if (!dir || !read || read.key.job !== record.id) return built;
  const generation = dedupGenerationCheckOp(layout, dir.version);
  const { next } = read.key;
  if (mode === 'next' && next && o.keepLastIfActive) {
    const added = handoffRecord(next, Date.now(), (t) => store.clock.fromLocal(t));
    const key = dedupKeyOp(layout, { id: o.id, data: encodeKey({ job: added.id }), version: read.version });
    const adding = await addedBuilt(store, added, encodeRecord(added), key);
    return {
      ops: [...built.ops, ...adding.ops, generation],
      events: [...(built.events ?? []), ...(adding.events ?? [])],
      wakes: built.wakes || adding.wakes,
    };
  }
  if (read.key.ttl !== undefined && !next) return built; // a throttle key set by another add: it runs out by itself
  return { ...built, ops: [...built.ops, dedupDeleteOp(layout, { id: o.id, version: read.version }), generation] };
}

/** The parked job as added when the kept one finishes at `now`: its delay counts from then (BullMQ's). */
export function handoffRecord(next: JobRecord, now: number, toServer: (t: number) => number = (t) => t): JobRecord {
  const delay = Math.min(Math.max(next.opts.delay ?? 0, 0), MAX_DELAY_MS);
  const lane = next.lane ?? laneOf(0, false);
  if (delay > 0) return { ...next, lane, timestamp: now, delay, state: 'delayed', due: toServer(now + delay) };
  return { ...next, lane, timestamp: now, state: 'waiting', due: undefined };
}

/**
 * How to plan a final finish of a job added with deduplication again after
 * `op` failed: its key changed (a park, a removal), or a key was deleted
 * by the sweep or by hand (the generation of keys) → read it again; the
 * parked job's id exists → only release the key; anything else is not the
 * key's. After `round` DEDUP_ROUNDS the finish goes on without the key (it
 * is then stale, and swept once its job is gone).
 */
export function handoffAfterConflict(
  layout: QueueLayout,
  record: JobRecord,
  mode: HandoffMode,
  op: ProtocolOp,
  err: unknown,
  round: number,
): HandoffMode | undefined {
  const o = dedupOf(record);
  if (!o || !finishReadsKey(o) || mode === 'none') return undefined;
  if (op.path === layout.dedupKey(o.id) || op.path === layout.dedupDir) return round >= DEDUP_ROUNDS ? 'none' : mode;
  if (!o.keepLastIfActive) return undefined;
  if (op.op === 'create' && err instanceof NodeExistsError && op.path.startsWith(`${layout.jobsDir}/`)) {
    return op.path === layout.job(record.id) ? undefined : 'release';
  }
  return undefined;
}
