/**
 * Drain and clean over a queue holding jobs of flows, as BullMQ's "hard"
 * removal does them: a child taken away leaves its parent's dependencies; a
 * parent left waiting for nothing goes too when it is in the same queue
 * (and so on up), and is released to wait when it is in another; a
 * finished parent takes its dependencies along.
 *
 * The bulk operations of @zkq/core remove jobs without a look at flows, so
 * the jobs of flows are taken first, one at a time through the protocol's
 * removeJob (which detaches a child and drops a parent's dependencies in
 * the transaction that removes it); the bulk operation removes the rest.
 */
import {
  type ChildKey,
  type CleanType,
  delayedPointers,
  type JobRecord,
  JobStateError,
  type Located,
  pointersIn,
  type QueueStore,
  readDeps,
  readyPointers,
  removeJob,
  type StoredJob,
  waitingStateOf,
} from '@zkq/core';

/** Pointers read at once. */
const CHUNK = 100;

/** A job of a flow found by a walk: a child that may be pending, or a job with a dependency node. */
interface Found {
  id: string;
  stored: StoredJob;
}

/** Whether a job may still be a pending dependency of its parent (a completed or settled one is not). */
function mayBePending(r: JobRecord): boolean {
  const link = r.parentLink;
  if (!link || r.state === 'completed') return false;
  return r.state !== 'failed' || !(link.fpof || link.cpof || link.idof || link.rdof);
}

/**
 * The jobs of flows among `located`: children that may be pending, and
 * jobs with a dependency node (parents), read in two requests per chunk.
 */
async function flowJobs(store: QueueStore, located: Located[]): Promise<Found[]> {
  const replies = await store.session.readMulti(
    located.map((l) => ({ op: 'getChildren' as const, path: store.layout.deps(l.id) })),
  );
  const jobs = await Promise.all(located.map((l) => store.getJob(l.id)));
  return located.flatMap((l, i) => {
    const stored = jobs[i];
    if (!stored) return [];
    return mayBePending(stored.record) || replies[i]?.ok ? [{ id: l.id, stored }] : [];
  });
}

/** Whether `child` is the last pending dependency of its parent `link`, which waits for it. */
async function lastPending(store: QueueStore, link: ChildKey, child: string): Promise<boolean> {
  const ps = store.sibling(link.queue);
  const [parent, deps, entry] = await Promise.all([
    ps.getJob(link.id),
    readDeps(ps, link.id),
    store.session.exists(ps.layout.depEntry(link.id, 'u', { queue: store.queue, id: child })),
  ]);
  return parent?.record.state === 'waiting-children' && deps?.pending === 1 && entry !== null;
}

/**
 * Removes a job the hard way: when it is the last pending child of a parent
 * in the same queue, that parent goes first (with its dependencies, and so
 * on up), so that no worker takes it between its release and its removal.
 * Resolves false when the job could not be removed (it runs).
 */
async function removeHard(store: QueueStore, id: string, stored: StoredJob): Promise<boolean> {
  const link = stored.record.parentLink;
  if (link?.queue === store.queue && (await lastPending(store, link, id))) {
    const parent = await store.getJob(link.id);
    if (parent) await removeHard(store, link.id, parent);
  }
  try {
    await removeJob(store, id);
    return true;
  } catch (err) {
    if (err instanceof JobStateError) return false;
    throw err;
  }
}

/** Drains the jobs of flows among the waiting (and, with `delayed`, delayed) ones. */
export async function drainFlowJobs(store: QueueStore, delayed: boolean): Promise<void> {
  await store.init();
  const sources = [...(delayed ? [delayedPointers(store, CHUNK)] : []), readyPointers(store, () => true, CHUNK)];
  for (const source of sources) {
    for await (const chunk of source) {
      for (const j of await flowJobs(store, chunk)) {
        const state = j.stored.record.state;
        if (state === 'waiting' || state === 'active' || state === 'delayed') await removeHard(store, j.id, j.stored);
      }
    }
  }
}

/**
 * Cleans the jobs of flows that `clean(grace, limit, type)` would take
 * (BullMQ's states and ages: see @zkq/core clean), up to `limit` (0: all).
 * Resolves with their ids.
 */
export async function cleanFlowJobs(
  store: QueueStore,
  grace: number,
  limit: number,
  type: CleanType,
): Promise<string[]> {
  await store.init();
  const cutoff = Date.now() - Math.max(0, grace);
  const max = limit > 0 ? limit : Number.POSITIVE_INFINITY;
  const finished = type === 'completed' || type === 'failed';
  let source: AsyncIterable<Located[]>;
  if (finished) source = pointersIn(store, store.layout.finishedDir(type), CHUNK);
  else if (type === 'delayed') source = delayedPointers(store, CHUNK);
  else if (type === 'prioritized') source = readyPointers(store, (l) => waitingStateOf(l) === 'prioritized', CHUNK);
  else if (type === 'active') return [];
  else source = readyPointers(store, (l) => waitingStateOf(l) === 'waiting', CHUNK);
  const removed: string[] = [];
  for await (const chunk of source) {
    if (removed.length >= max) break;
    for (const j of await flowJobs(store, chunk)) {
      if (removed.length >= max) break;
      const r = j.stored.record;
      const age = finished ? (r.finishedOn ?? r.timestamp) : r.timestamp;
      const state = finished || type === 'delayed' ? type : 'waiting';
      const inState = r.state === state || (state === 'waiting' && r.state === 'active');
      if (age > cutoff || !inState) continue;
      if (await removeHard(store, j.id, j.stored)) removed.push(j.id);
    }
  }
  if (removed.length > 0) await store.publish([{ event: 'cleaned', count: String(removed.length), ts: Date.now() }]);
  return removed;
}
