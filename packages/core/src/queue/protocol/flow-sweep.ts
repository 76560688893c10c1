/**
 * Deleting a parent's dependency node: with the parent, when it is small
 * enough to go inside the change that removes it; otherwise by the leader's
 * sweep of orphan nodes, a chunk per transaction (and by an add that finds
 * an earlier job's node under its id).
 */

import { NoNodeError } from '../../zk/errors.js';
import type { ProtocolContext } from './context.js';
import { depsTree } from './deps-entries.js';
import type { ProtocolOp } from './executor.js';

const EMPTY = Buffer.alloc(0);

/**
 * Most nodes (entries and their buckets) a parent's dependency node may
 * hold for it to be deleted inside the change that removes the parent (its
 * finish, its removal); a node with more is left for the leader's sweep,
 * which deletes it in chunks, so the parent's own change always fits one
 * transaction.
 */
export const DROP_INLINE = 400;
/** Entries the sweep deletes per transaction. */
export const DROP_CHUNK = 500;

/**
 * Deletes an earlier job's dependency node under `id`, DROP_CHUNK paths per
 * transaction, deepest first. A chunk that fails (another adder deleted
 * them first, or a bucket holds a new entry) is left alone.
 */
export async function dropStaleDeps(ps: ProtocolContext, id: string): Promise<void> {
  const paths = (await depsTree(ps, id)) ?? [];
  for (let i = 0; i < paths.length; i += DROP_CHUNK) {
    const ops = paths.slice(i, i + DROP_CHUNK).map((path): ProtocolOp => ({ op: 'delete', path }));
    // read back by its receipt: the deletes are blind, and another add of a child to the same parent may have
    // made the same paths again since; sent again after a lost reply, they would take that add's node
    const [result] = await ps.executor.run([{ build: () => ({ ops }) }]);
    if (!result?.ok) return;
  }
}

/**
 * The ops that delete a parent's dependency node and its entries (with the
 * parent); none without one, or with more than DROP_INLINE entries (the
 * sweep takes those). They fail if a child changed an entry meanwhile:
 * `reread` for a unit whose build reads again (else the caller plans again).
 */
export async function dropDepsOps(store: ProtocolContext, id: string, role?: 'reread'): Promise<ProtocolOp[]> {
  const tree = await depsTree(store, id, DROP_INLINE);
  if (!tree) return [];
  const del = (p: string): ProtocolOp => (role ? { op: 'delete', path: p, role } : { op: 'delete', path: p });
  return tree.map(del);
}

/** Dependency nodes read at once by the sweep. */
const SWEEP_BATCH = 100;

/**
 * Deletes the dependency nodes of parents that are gone (retention trimmed
 * them, they were removed as they finished, or they had too many entries to
 * go with them): the leader's tidy-up, one shard at a time, a node's
 * entries DROP_CHUNK per transaction. Each transaction proves the parent
 * absent by creating and deleting the parent's record node in it, so a
 * parent added again meanwhile keeps its node. Resolves with the nodes deleted.
 */
export async function sweepOrphanDeps(store: ProtocolContext, fence: () => ProtocolOp[]): Promise<number> {
  const { layout, session } = store;
  let swept = 0;
  for (const shard of await store.children(layout.depsDir)) {
    const ids = await store.children(`${layout.depsDir}/${shard}`);
    for (let i = 0; i < ids.length; i += SWEEP_BATCH) {
      const batch = ids.slice(i, i + SWEEP_BATCH);
      const replies = await session.readMulti(batch.map((id) => ({ op: 'getData' as const, path: layout.job(id) })));
      const orphans = batch.filter((_, j) => {
        const r = replies[j];
        return r && !r.ok && r.error instanceof NoNodeError;
      });
      for (const id of orphans) if (await sweepOne(store, id, fence)) swept++;
    }
  }
  return swept;
}

/** Deletes one orphan node, its entries a chunk per transaction; false when its parent came back or it changed. */
export async function sweepOne(store: ProtocolContext, id: string, fence: () => ProtocolOp[]): Promise<boolean> {
  const { layout } = store;
  // entries, then their buckets, then the node: each chunk deletes what it empties before it
  const paths = (await depsTree(store, id)) ?? [];
  for (let i = 0; i < paths.length; i += DROP_CHUNK) {
    const chunk = paths.slice(i, i + DROP_CHUNK);
    const ops: ProtocolOp[] = [
      { op: 'create', path: layout.job(id), data: EMPTY },
      ...chunk.map((path): ProtocolOp => ({ op: 'delete', path })),
      { op: 'delete', path: layout.job(id) },
    ];
    const [result] = await store.executor.run([{ build: () => ({ ops }) }], { fence, receipt: false });
    if (!result?.ok) return false;
  }
  return true;
}
