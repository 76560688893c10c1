/**
 * Retention outside the finish: the oldest finished jobs past a count, or
 * older than an age, deleted with their pointers. Called by the Trimmer
 * (the finish keeps a count itself: trims.ts).
 */
import { sortBySequence } from '../../zk/sequence.js';
import { idOfPointer } from '../layout.js';
import type { KeepJobs } from '../types.js';
import { leaveSetOps, trimOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import { detachOps, mayBePendingChild } from './flow-detach.js';
import { joinBuilt } from './flow-parent.js';
import { applyMoves, type Move } from './moves.js';
import { bucketsOf, type Located, removeIfEmpty } from './walks.js';

/**
 * Deletes the oldest finished jobs of `kind` beyond `keep`; resolves with the
 * removed ids. Empty buckets but the tail are removed on the way.
 */
export async function trimFinished(
  store: ProtocolContext,
  kind: 'completed' | 'failed',
  keep: KeepJobs,
): Promise<string[]> {
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
async function trimMoves(store: ProtocolContext, kind: 'completed' | 'failed', victims: Located[]): Promise<Move[]> {
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
