/**
 * Reads by state: pages of job ids (reads-counts.ts says where each state
 * lives), in the orders BullMQ's Redis lists and sorted sets hold them, by
 * Redis's index rules (negative indexes count from the end).
 *
 * A state is walked as segments (a bucket, an hour of delayed jobs) from
 * either end. A page reads only the segments it needs: it skips whole
 * buckets by their stat where no active job can hide in them (an active
 * job's pointer stays in its lane, and is left out of waiting pages), and
 * reads bucket listings otherwise. Both-negative ranges are read from the
 * far end; a range to the end (`end` -1) reads the whole state, as Redis's
 * does. A request lists one bucket at most; a delayed hour is read whole, all
 * its buckets, since they are not in due order.
 */
import { sortBySequence } from '../zk/sequence.js';
import { idOfDelayed, idOfPointer, LIFO_LANE, numberOf } from './layout.js';
import { sortLanes, waitingStateOf } from './protocol/index.js';
import { canonical, delayedNames, hoursOf, sizeOf } from './reads-counts.js';
import type { QueueStore } from './store.js';

/** A run of ids read together (a bucket, an hour of delayed jobs), in the walk's order. */
interface Segment {
  /** How many ids it holds, when that is known without listing them (so it can be skipped). */
  size?: () => Promise<number>;
  ids: () => Promise<string[]>;
}

/** The segments of a state, first to last, or last to first. */
type Walk = (reverse: boolean) => AsyncIterable<Segment>;

/** The buckets of a container as segments; `newestFirst` walks buckets and pointers backwards. */
async function* bucketSegments(
  store: QueueStore,
  container: string,
  newestFirst: boolean,
  exclude: ReadonlySet<string>,
): AsyncGenerator<Segment> {
  const buckets = (await store.children(container))
    .filter((n) => n.startsWith('b-'))
    .sort((a, b) => numberOf(a) - numberOf(b));
  if (newestFirst) buckets.reverse();
  for (const bucket of buckets) {
    const path = `${container}/${bucket}`;
    const ids = async () =>
      sortBySequence(await store.children(path), undefined, newestFirst)
        .map(idOfPointer)
        .filter((id) => !exclude.has(id));
    // An active job's pointer may be in any bucket: only a queue without one can skip by count.
    if (exclude.size > 0) yield { ids };
    else yield { ids, size: async () => (await store.session.exists(path))?.numChildren ?? 0 };
  }
}

/** Waiting jobs of the lanes of one group, in serving order (reversed: last served first). */
function readyWalk(store: QueueStore, group: 'waiting' | 'prioritized', active: ReadonlySet<string>): Walk {
  return async function* (reverse) {
    const lanes = sortLanes(await store.children(store.layout.ready)).filter((l) => waitingStateOf(l) === group);
    if (reverse) lanes.reverse();
    for (const lane of lanes) {
      // the lifo lane serves its newest pointer first
      yield* bucketSegments(store, store.layout.lane(lane), (lane === LIFO_LANE) !== reverse, active);
    }
  };
}

function finishedWalk(store: QueueStore, kind: 'completed' | 'failed'): Walk {
  return (reverse) => bucketSegments(store, store.layout.finishedDir(kind), reverse, new Set());
}

/** Parents waiting for their children, in parking order. */
function parkedWalk(store: QueueStore): Walk {
  return (reverse) => bucketSegments(store, store.layout.childrenDir, reverse, new Set());
}

/** Delayed jobs by due time, an hour at a time (its buckets are not in due order, so it is read whole). */
function delayedWalk(store: QueueStore): Walk {
  return async function* (reverse) {
    const hours = await hoursOf(store);
    if (reverse) hours.reverse();
    for (const { path } of hours) {
      yield {
        size: () => sizeOf(store, path),
        ids: async () => {
          const names = (await delayedNames(store, path)).sort(); // due (13 digits), then id
          if (reverse) names.reverse();
          return names.map(idOfDelayed);
        },
      };
    }
  };
}

/** Active jobs, first claimed first. */
function activeWalk(store: QueueStore): Walk {
  return async function* (reverse) {
    yield {
      ids: async () => {
        const { layout, session } = store;
        const names = await store.children(layout.claimsDir);
        const stats = await Promise.all(names.map((id) => session.exists(layout.claim(id))));
        const claimed = names.flatMap((id, i) => {
          const stat = stats[i];
          return stat ? [{ id, zxid: stat.czxid }] : [];
        });
        claimed.sort((a, b) => a.zxid - b.zxid);
        if (reverse) claimed.reverse();
        return claimed.map((c) => c.id);
      },
    };
  };
}

/** Up to `count` ids after skipping `skip`, reading only the segments it needs. */
async function take(segments: AsyncIterable<Segment>, skip: number, count: number): Promise<string[]> {
  const out: string[] = [];
  if (count <= 0) return out;
  for await (const segment of segments) {
    if (skip > 0 && segment.size) {
      const n = await segment.size();
      if (n <= skip) {
        skip -= n;
        continue;
      }
    }
    const ids = await segment.ids();
    if (skip >= ids.length) {
      skip -= ids.length;
      continue;
    }
    for (const id of ids.slice(skip)) {
      out.push(id);
      if (out.length >= count) return out;
    }
    skip = 0;
  }
  return out;
}

/** Redis's LRANGE/ZRANGE index rules: negative counts from the end; out-of-range ends are clamped. */
export function redisRange<T>(items: readonly T[], start: number, end: number): T[] {
  const n = items.length;
  const from = Math.max(start < 0 ? n + start : start, 0);
  const to = Math.min(end < 0 ? n + end : end, n - 1);
  return from > to ? [] : items.slice(from, to + 1);
}

/** Items `start..end` (Redis's rules) of a walk, reading from the nearer end when both are negative. */
async function pageOf(walk: Walk, reverse: boolean, start: number, end: number): Promise<string[]> {
  if (start >= 0 && end >= 0) return end < start ? [] : take(walk(reverse), start, end - start + 1);
  if (start < 0 && end < 0) {
    return end < start ? [] : (await take(walk(!reverse), -end - 1, end - start + 1)).reverse();
  }
  return redisRange(await take(walk(reverse), 0, Number.POSITIVE_INFINITY), start, end);
}

/**
 * BullMQ's getRanges for one type, as its Redis script answers: a sorted set
 * ascending (`asc`) or descending; a list (`wait`, `active`) is newest first
 * as Redis keeps it, and with `asc` its oldest `start..end` still newest
 * first (BullMQ's Queue reverses those pages).
 */
export async function rangeOfState(
  store: QueueStore,
  type: string,
  start: number,
  end: number,
  asc: boolean,
): Promise<string[]> {
  const reverse = !asc;
  switch (canonical(type)) {
    case 'wait':
    case 'prioritized': {
      const active = new Set(await store.children(store.layout.claimsDir));
      const group = canonical(type) === 'wait' ? 'waiting' : 'prioritized';
      const page = await pageOf(readyWalk(store, group, active), reverse, start, end);
      return group === 'waiting' && asc ? page.reverse() : page;
    }
    case 'active': {
      const page = await pageOf(activeWalk(store), reverse, start, end);
      return asc ? page.reverse() : page;
    }
    case 'delayed':
      return pageOf(delayedWalk(store), reverse, start, end);
    case 'completed':
    case 'failed':
      return pageOf(finishedWalk(store, type as 'completed' | 'failed'), reverse, start, end);
    case 'waiting-children':
      return pageOf(parkedWalk(store), reverse, start, end);
    default:
      return [];
  }
}
