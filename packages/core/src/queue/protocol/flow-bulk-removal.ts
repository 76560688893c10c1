/**
 * Bulk removals over jobs of flows: drain, clean and obliterate take a job
 * of a flow the way a single removal does, so no parent is left waiting for
 * a child that is gone.
 *
 * - A child taken away leaves its parent's dependencies; the last one
 *   releases the parent (protocol `detachOps`). When that parent is in the
 *   same queue, drain and clean remove it too, in the same transaction (and
 *   so on up), so that no worker runs it between its release and its
 *   removal: BullMQ's "hard" removal.
 * - A parent takes its dependency node along (protocol `dropDepsOps`).
 *
 * Each removal deletes the job's record at the version the bulk operation
 * read, so a job claimed, finished or moved since is left alone (and so is
 * its parent); the parent's side is built inside the unit with role
 * `reread`, so siblings removed together each read the node again.
 *
 * Queues without flows pay nothing: a child is known from its record, which
 * the bulk operations read anyway, and a parent's dependency node is looked
 * for only in a queue whose `deps/` has a shard.
 */
import { NoNodeError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../event-record.js';
import { QueueLayout } from '../layout.js';
import { removeOps } from './builders.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { readPaged } from './deps-entries.js';
import { detachOps, mayBePendingChild } from './flow-detach.js';
import { joinBuilt } from './flow-parent.js';
import { dropDepsOps } from './flow-sweep.js';
import type { Move } from './moves.js';

/** Records read at once by obliterate's walk. */
const WALK_CHUNK = 100;

/** A job read by a bulk operation. */
export interface ReadJob {
  id: string;
  stored: StoredJob | undefined;
}

/** Whether the queue may hold a parent's dependency node (one listing of `deps/`). */
export async function mayHoldParents(store: ProtocolContext): Promise<boolean> {
  return (await store.children(store.layout.depsDir)).length > 0;
}

/**
 * The ids among `jobs` that belong to flows: children that may be pending,
 * and parents (a record marked so, or, when `parents`, one with a dependency
 * node: a child added later to an existing job makes it a parent).
 */
export async function flowIdsAmong(store: ProtocolContext, jobs: ReadJob[], parents: boolean): Promise<Set<string>> {
  const ids = new Set<string>();
  const unknown: string[] = [];
  for (const j of jobs) {
    const r = j.stored?.record;
    if (!r) continue;
    if (r.hasDeps || mayBePendingChild(r)) ids.add(j.id);
    else if (parents) unknown.push(j.id);
  }
  if (unknown.length > 0) {
    // a node's existence is all that is read: its data, not its (bucketed) listing, paged under the packet limit
    const replies = await readPaged(
      store.session,
      unknown.map((id) => ({ op: 'getData' as const, path: store.layout.deps(id) })),
    );
    unknown.forEach((id, i) => {
      if (replies[i]?.ok) ids.add(id); // the node exists
    });
  }
  return ids;
}

/**
 * The removal of a job of a flow read at `version` through `pointer`: its
 * record (at that version) and pointer, its dependency node, and its leaving
 * its parent's dependencies the hard way (see the header).
 */
export function flowRemoval(
  store: ProtocolContext,
  j: { id: string; version: number | undefined; pointer: string | undefined; stored: StoredJob },
  events: QueueEventRecord[],
): Move {
  return {
    id: j.id,
    build: async () =>
      joinBuilt(
        { ops: removeOps(store.layout, j), events },
        { ops: await dropDepsOps(store, j.id, 'reread') },
        await detachOps(store, j.stored.record, { reread: true, hard: true }),
      ),
  };
}

/**
 * Before a queue is obliterated: takes its children whose parents live in
 * other queues out of those parents' dependencies (the last one releases
 * its parent). Walks every record only when another queue of the namespace
 * holds dependency nodes. Resolves with the children detached; throws when
 * one could not be (obliterate then deletes nothing).
 */
export async function detachForeignChildren(store: ProtocolContext): Promise<number> {
  if (!(await othersHoldParents(store))) return 0;
  const { layout } = store;
  let detached = 0;
  for (const shard of await store.children(layout.jobsDir)) {
    const ids = await store.children(`${layout.jobsDir}/${shard}`);
    for (let i = 0; i < ids.length; i += WALK_CHUNK) {
      // one read per record: a batch of records can be far past a reply's size limit
      const batch = ids.slice(i, i + WALK_CHUNK);
      const jobs = await Promise.all(batch.map((id) => store.getJob(id).catch(() => undefined)));
      const foreign = batch.filter((_, j) => {
        const r = jobs[j]?.record;
        return r && mayBePendingChild(r) && r.parentLink?.queue !== store.queue;
      });
      const moves: Move[] = foreign.map((id) => ({
        id,
        // read again inside the unit: a sibling writing the parent's node first makes it read anew
        build: async () => {
          const stored = await store.getJob(id);
          const built = stored && (await detachOps(store, stored.record, { reread: true }));
          return built ?? { ops: [] };
        },
      }));
      const results = await store.executor.run(moves, { receipt: false });
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
      detached += moves.length;
    }
  }
  return detached;
}

/** Whether any other queue of the namespace holds a dependency node. */
async function othersHoldParents(store: ProtocolContext): Promise<boolean> {
  for (const name of await store.session.getChildren('/')) {
    if (name === store.queue) continue;
    let deps: string;
    try {
      deps = new QueueLayout(name).depsDir;
    } catch {
      continue; // not a queue's node
    }
    const shards = await store.session.getChildren(deps).catch((err) => {
      if (err instanceof NoNodeError) return [];
      throw err;
    });
    if (shards.length > 0) return true;
  }
  return false;
}
