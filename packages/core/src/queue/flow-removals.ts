/**
 * Bulk removals over jobs of flows: drain, clean and obliterate take a job
 * of a flow the way a single removal does, so no parent is left waiting for
 * a child that is gone.
 *
 * - A child taken away leaves its parent's dependencies; the last one
 *   releases the parent (protocol `detachOps`). When that parent is in the
 *   same queue, a drain or clean takes it too, before the child (and so on
 *   up), so that no worker runs it between its release and its removal:
 *   BullMQ's "hard" removal.
 * - A parent takes its dependency node along (protocol `dropDepsOps`).
 *
 * Queues without flows pay nothing: a child is known from its record, which
 * the bulk operations read anyway, and a parent's dependency node is looked
 * for only in a queue whose `deps/` has a shard.
 */
import { NoNodeError } from '../zk/errors.js';
import { JobStateError } from './errors.js';
import { QueueLayout } from './layout.js';
import { detachOps, type Move, mayBePendingChild } from './protocol/index.js';
import type { QueueStore, StoredJob } from './store.js';

/** Records read at once by obliterate's walk. */
const WALK_CHUNK = 100;
/** Attempts of a detach whose parent keeps changing under it. */
const DETACH_ATTEMPTS = 5;

/** A job read by a bulk operation. */
export interface ReadJob {
  id: string;
  stored: StoredJob | undefined;
}

/** Whether the queue may hold a parent's dependency node (one listing of `deps/`). */
export async function mayHoldParents(store: QueueStore): Promise<boolean> {
  return (await store.children(store.layout.depsDir)).length > 0;
}

/**
 * The ids among `jobs` that belong to flows: children that may be pending,
 * and parents (a record marked so, or, when `parents`, one with a dependency
 * node: a child added later to an existing job makes it a parent).
 */
export async function flowIdsAmong(store: QueueStore, jobs: ReadJob[], parents: boolean): Promise<Set<string>> {
  const ids = new Set<string>();
  const unknown: string[] = [];
  for (const j of jobs) {
    const r = j.stored?.record;
    if (!r) continue;
    if (r.hasDeps || mayBePendingChild(r)) ids.add(j.id);
    else if (parents) unknown.push(j.id);
  }
  if (unknown.length > 0) {
    const replies = await store.session.readMulti(
      unknown.map((id) => ({ op: 'getChildren' as const, path: store.layout.deps(id) })),
    );
    unknown.forEach((id, i) => {
      if (replies[i]?.ok) ids.add(id); // the node exists
    });
  }
  return ids;
}

/**
 * Removes a job of a flow the hard way: when it is the last pending child of
 * a waiting parent in the same queue, that parent goes first (recursively).
 * `remove` is the single-job removal (it detaches and drops dependencies in
 * its own transaction). Resolves false when the job could not be removed
 * (it runs).
 */
export async function removeHard(
  store: QueueStore,
  id: string,
  stored: StoredJob,
  remove: (store: QueueStore, id: string) => Promise<boolean>,
): Promise<boolean> {
  const link = stored.record.parentLink;
  if (link?.queue === store.queue && (await lastPendingOf(store, link.id, id))) {
    const parent = await store.getJob(link.id);
    if (parent) await removeHard(store, link.id, parent, remove);
  }
  try {
    return await remove(store, id);
  } catch (err) {
    if (err instanceof JobStateError) return false;
    throw err;
  }
}

/** Whether `child` is the last pending dependency of `parentId` (same queue), which waits for it. */
async function lastPendingOf(store: QueueStore, parentId: string, child: string): Promise<boolean> {
  const { layout } = store;
  const [parent, deps, entry] = await Promise.all([
    store.getJob(parentId),
    store.session.getData(layout.deps(parentId)).catch((err) => {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    }),
    store.session.exists(layout.depEntry(parentId, 'u', { queue: store.queue, id: child })),
  ]);
  const pending = deps ? (JSON.parse(deps.data.toString()) as { pending?: number }).pending : undefined;
  return parent?.record.state === 'waiting-children' && pending === 1 && entry !== null;
}

/**
 * Before a queue is obliterated: takes its children whose parents live in
 * other queues out of those parents' dependencies (the last one releases
 * its parent). Walks every record only when another queue of the namespace
 * holds dependency nodes. Resolves with the children detached.
 */
export async function detachForeignChildren(store: QueueStore): Promise<number> {
  if (!(await othersHoldParents(store))) return 0;
  const { layout } = store;
  let detached = 0;
  for (const shard of await store.children(layout.jobsDir)) {
    const ids = await store.children(`${layout.jobsDir}/${shard}`);
    for (let i = 0; i < ids.length; i += WALK_CHUNK) {
      // one read per record: a batch of records can be far past a reply's size limit
      const batch = ids.slice(i, i + WALK_CHUNK);
      const jobs = await Promise.all(batch.map((id) => store.getJob(id).catch(() => undefined)));
      for (const [j, id] of batch.entries()) {
        const record = jobs[j]?.record;
        if (!record || !mayBePendingChild(record) || record.parentLink?.queue === store.queue) continue;
        if (await detachOne(store, id)) detached++;
      }
    }
  }
  return detached;
}

/** Whether any other queue of the namespace holds a dependency node. */
async function othersHoldParents(store: QueueStore): Promise<boolean> {
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

/** Detaches one child from its parent at the versions read, read again on a conflict. */
async function detachOne(store: QueueStore, id: string): Promise<boolean> {
  for (let attempt = 1; attempt <= DETACH_ATTEMPTS; attempt++) {
    const stored = await store.getJob(id);
    if (!stored || !mayBePendingChild(stored.record)) return false;
    const built = await detachOps(store, stored.record);
    if (!built) return false;
    const move: Move = { id, build: () => built };
    const [result] = await store.executor.run([move], { receipt: false });
    if (result?.ok) return true;
  }
  return false;
}
