import { sortBySequence } from '../zk/sequence.js';
import { sortLanes } from './head.js';
import { dueOfDelayed, idOfDelayed, idOfPointer, LIFO_LANE } from './layout.js';
import type { QueueStore } from './store.js';
import type { JobType } from './types.js';

async function countUnder(store: QueueStore, dir: string): Promise<number> {
  const subdirs = await store.children(dir);
  const stats = await Promise.all(subdirs.map((d) => store.session.exists(`${dir}/${d}`)));
  return stats.reduce((sum, s) => sum + (s?.numChildren ?? 0), 0);
}

/** Pointers per lane (buckets summed from their stats). */
async function laneCounts(store: QueueStore): Promise<Map<string, number>> {
  const { layout } = store;
  const lanes = await store.children(layout.ready);
  const counts = await Promise.all(lanes.map((lane) => countUnder(store, layout.lane(lane))));
  return new Map(lanes.map((lane, i) => [lane, counts[i] ?? 0]));
}

export type JobCounts = Record<string, number>;

/** Counts per state (BullMQ's getJobCounts). `waiting` excludes active jobs, whose pointers stay in ready/. */
export async function getJobCounts(store: QueueStore, types: JobType[]): Promise<JobCounts> {
  await store.init();
  const { layout, session } = store;
  const [lanes, claims, delayed, completed, failed, paused] = await Promise.all([
    laneCounts(store),
    store.children(layout.claimsDir),
    countUnder(store, layout.delayedDir),
    session.exists(layout.completedDir),
    session.exists(layout.failedDir),
    store.isPaused(),
  ]);
  const active = claims.length;
  let plain = 0;
  let prioritized = 0;
  for (const [lane, n] of lanes) {
    if (lane === LIFO_LANE || lane === 'p-0000000000') plain += n;
    else prioritized += n;
  }
  // Active jobs keep their pointer; take them out of the lane they came from (mostly plain).
  const waitingAll = Math.max(0, plain + prioritized - active);
  const waiting = Math.max(0, waitingAll - prioritized);
  const all: JobCounts = {
    active,
    completed: completed?.numChildren ?? 0,
    failed: failed?.numChildren ?? 0,
    delayed,
    prioritized: Math.min(prioritized, waitingAll),
    waiting: paused ? 0 : waiting,
    wait: paused ? 0 : waiting,
    paused: paused ? waiting : 0,
    'waiting-children': 0,
    repeat: 0,
  };
  const wanted = types.length
    ? types
    : (['active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting', 'paused'] as JobType[]);
  return Object.fromEntries(wanted.map((t) => [t, all[t] ?? 0]));
}

/** Job ids in `type`, in BullMQ's order (`asc` oldest first), up to `limit`. */
export async function listJobIds(store: QueueStore, type: JobType, limit: number, asc: boolean): Promise<string[]> {
  const { layout } = store;
  switch (type) {
    case 'active':
      return (await store.children(layout.claimsDir)).sort().slice(0, limit);
    case 'completed':
    case 'failed': {
      const dir = type === 'completed' ? layout.completedDir : layout.failedDir;
      return sortBySequence(await store.children(dir), undefined, !asc)
        .slice(0, limit)
        .map(idOfPointer);
    }
    case 'delayed': {
      const out: string[] = [];
      const windows = (await store.children(layout.delayedDir)).sort();
      for (const w of windows) {
        const names = (await store.children(`${layout.delayedDir}/${w}`)).sort(
          (a, b) => dueOfDelayed(a) - dueOfDelayed(b),
        );
        out.push(...names.map(idOfDelayed));
        if (out.length >= limit) break;
      }
      return out.slice(0, limit);
    }
    case 'waiting':
    case 'wait':
    case 'paused':
    case 'prioritized': {
      const active = new Set(await store.children(layout.claimsDir));
      const out: string[] = [];
      for (const lane of sortLanes(await store.children(layout.ready))) {
        const isPrioritized = lane !== LIFO_LANE && lane !== 'p-0000000000';
        if ((type === 'prioritized') !== isPrioritized) continue;
        const buckets = sortBySequence(await store.children(layout.lane(lane)), undefined, lane === LIFO_LANE);
        for (const b of buckets) {
          const names = sortBySequence(
            await store.children(`${layout.lane(lane)}/${b}`),
            undefined,
            lane === LIFO_LANE,
          );
          for (const n of names) {
            const id = idOfPointer(n);
            if (!active.has(id)) out.push(id);
          }
          if (out.length >= limit) return out.slice(0, limit);
        }
      }
      return out;
    }
    default:
      return [];
  }
}
