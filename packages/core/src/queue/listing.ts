/**
 * zkq's Queue reads by state: counts and lists of ids, as its API answers
 * them (a paused queue's waiting jobs count as `paused`). Its sizes come
 * from reads-counts.ts, whose counts and pages (reads-pages.ts) the BullMQ
 * backend answers with, as BullMQ on Redis does.
 */
import { delayedHours, type Located, pointersIn, readyPointers, waitingStateOf } from './protocol/index.js';
import { delayedCount, laneSizes, sizeOf } from './reads-counts.js';
import type { QueueStore } from './store.js';
import type { JobType } from './types.js';

/**
 * Whether nothing runs and nothing waits to run (BullMQ's `drained`): no
 * claim, and no pointer in ready/ (or the queue is paused, so its waiting
 * jobs wait for a resume). Delayed jobs and parents waiting for children do
 * not count.
 */
export async function isDrained(store: QueueStore): Promise<boolean> {
  const claims = await store.session.exists(store.layout.claimsDir);
  if ((claims?.numChildren ?? 0) > 0) return false;
  if (await store.isPaused()) return true;
  for (const n of (await laneSizes(store)).values()) if (n > 0) return false;
  return true;
}

export type JobCounts = Record<string, number>;

/** Counts per state (BullMQ's getJobCounts). `waiting` excludes active jobs, whose pointers stay in ready/. */
export async function getJobCounts(store: QueueStore, types: JobType[]): Promise<JobCounts> {
  await store.init();
  const { layout } = store;
  const [lanes, claims, delayed, completed, failed, paused, parents] = await Promise.all([
    laneSizes(store),
    store.children(layout.claimsDir),
    delayedCount(store),
    sizeOf(store, layout.completedDir),
    sizeOf(store, layout.failedDir),
    store.isPaused(),
    sizeOf(store, layout.childrenDir),
  ]);
  const active = claims.length;
  let plain = 0;
  let prioritized = 0;
  for (const [lane, n] of lanes) {
    if (waitingStateOf(lane) === 'waiting') plain += n;
    else prioritized += n;
  }
  // Active jobs keep their pointer; take them out of the lane they came from (mostly plain).
  const waitingAll = Math.max(0, plain + prioritized - active);
  const waiting = Math.max(0, waitingAll - prioritized);
  const all: JobCounts = {
    active,
    completed,
    failed,
    delayed,
    prioritized: Math.min(prioritized, waitingAll),
    waiting: paused ? 0 : waiting,
    wait: paused ? 0 : waiting,
    paused: paused ? waiting : 0,
    'waiting-children': parents,
    repeat: 0,
  };
  const wanted = types.length
    ? types
    : ([
        'active',
        'completed',
        'failed',
        'delayed',
        'prioritized',
        'waiting',
        'paused',
        'waiting-children',
      ] as JobType[]);
  return Object.fromEntries(wanted.map((t) => [t, all[t] ?? 0]));
}

/** Job ids in `type`, in BullMQ's order (`asc` oldest first), up to `limit`. */
export async function listJobIds(store: QueueStore, type: JobType, limit: number, asc: boolean): Promise<string[]> {
  const { layout } = store;
  const take = async (source: AsyncIterable<Located[]>, keep: (id: string) => boolean = () => true) => {
    const out: string[] = [];
    for await (const chunk of source) {
      for (const p of chunk) if (keep(p.id)) out.push(p.id);
      if (out.length >= limit) break;
    }
    return out.slice(0, limit);
  };
  switch (type) {
    case 'active':
      return (await store.children(layout.claimsDir)).sort().slice(0, limit);
    case 'completed':
    case 'failed':
      return take(pointersIn(store, layout.finishedDir(type), 200, asc ? 'sequence' : 'reverse'));
    case 'waiting-children':
      return take(pointersIn(store, layout.childrenDir, 200, asc ? 'sequence' : 'reverse'));
    case 'delayed':
      return take(
        (async function* () {
          for (const hour of await delayedHours(store)) yield* pointersIn(store, hour, 200, 'due');
        })(),
      );
    case 'waiting':
    case 'wait':
    case 'paused':
    case 'prioritized': {
      const active = new Set(await store.children(layout.claimsDir));
      const wanted = type === 'prioritized' ? 'prioritized' : 'waiting';
      return take(
        readyPointers(store, (lane) => waitingStateOf(lane) === wanted, 200),
        (id) => !active.has(id),
      );
    }
    default:
      return [];
  }
}
