/**
 * Reading the head of the ready queue: which jobs to try to claim next.
 *
 * Lanes are taken in order (`l` lifo lane first, newest first; then
 * `p-<priority>` lanes, lowest number first); inside a lane, buckets and
 * pointers by sequence number. Only the first non-empty buckets are listed,
 * so a scan costs a few small `getChildren` calls whatever the backlog. Empty
 * buckets that are not a lane's tail are removed on the way (a producer with
 * a stale view that appends to one meets NoNode and re-reads the tail).
 */
import { NoNodeError, NotEmptyError } from '../zk/errors.js';
import { sortBySequence } from '../zk/sequence.js';
import type { Watcher } from '../zk/types.js';
import { idOfPointer, LIFO_LANE } from './layout.js';
import type { QueueStore } from './store.js';
import type { Candidate } from './transitions.js';

export interface ScanOptions {
  /** Most candidates to return. */
  limit: number;
  /** Job ids to leave out (active claims, jobs in hand). */
  exclude: ReadonlySet<string>;
  /** Watch every listing: fires when anything at the head changes (used when idle). */
  watch?: Watcher;
}

/** Lanes in the order they are served. */
export function sortLanes(lanes: string[]): string[] {
  return lanes.slice().sort((a, b) => (a === LIFO_LANE ? -1 : b === LIFO_LANE ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

/** The first `limit` claimable candidates, in serving order. */
export async function scanHead(store: QueueStore, o: ScanOptions): Promise<Candidate[]> {
  const { layout } = store;
  const out: Candidate[] = [];
  const lanes = sortLanes(await store.children(layout.ready, o.watch));
  for (const lane of lanes) {
    const lifo = lane === LIFO_LANE;
    const buckets = sortBySequence(await store.children(layout.lane(lane), o.watch), undefined, lifo);
    const tail = lifo ? buckets[0] : buckets[buckets.length - 1];
    for (const bucket of buckets) {
      const path = `${layout.lane(lane)}/${bucket}`;
      const names = await store.children(path, o.watch);
      if (names.length === 0 && bucket !== tail) {
        void removeEmptyBucket(store, path);
        continue;
      }
      for (const name of sortBySequence(names, undefined, lifo)) {
        const id = idOfPointer(name);
        if (o.exclude.has(id)) continue;
        out.push({ id, pointer: `${path}/${name}`, lane });
        if (out.length >= o.limit) return out;
      }
    }
  }
  return out;
}

async function removeEmptyBucket(store: QueueStore, path: string): Promise<void> {
  try {
    await store.session.delete(path);
  } catch (err) {
    if (!(err instanceof NotEmptyError) && !(err instanceof NoNodeError)) return;
  }
}
