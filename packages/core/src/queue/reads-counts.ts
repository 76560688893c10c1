/**
 * Reads by state: how many jobs each state holds (reads-pages.ts reads
 * pages of their ids), in BullMQ's states over zkq's containers, for the
 * front-ends' counts. Nothing outside core parses a znode name.
 *
 * - `wait` (`waiting`): ready pointers of the plain and lifo lanes, less the
 *   active jobs (a running job keeps its pointer in ready/). Served lifo
 *   lane first (newest first), then FIFO.
 * - `prioritized`: the other lanes, lowest priority number first, FIFO inside.
 * - `active`: the claims, in claim order (their czxid).
 * - `delayed`: by due time; `completed` and `failed`: in finishing order.
 * - `waiting-children`: parents waiting for their children, in parking order.
 * - `paused`, `repeat`: empty. BullMQ 6 keeps the waiting jobs of a paused
 *   queue in `wait` (its `paused` list is only read from queues made by
 *   older versions), and job schedulers are listed by their own calls.
 *
 * Unlike a Lua script on Redis, a count or a page is read in several
 * requests, not as one snapshot: a job that moves meanwhile may be counted
 * in two states or in none.
 */
import { DELAY_WINDOW_MS, dueOfDelayed, LIFO_LANE, numberOf } from './layout.js';
import { delayedHours, waitingStateOf } from './protocol/index.js';
import type { QueueStore } from './store.js';

/** Records read at once to learn the lanes of active jobs. */
const RECORD_READS_IN_FLIGHT = 32;

/** BullMQ names `wait` also `waiting`. */
export function canonical(type: string): string {
  return type === 'waiting' ? 'wait' : type;
}

/** Pointers in a bucketed container: its buckets' child counts summed. */
export async function sizeOf(store: QueueStore, container: string): Promise<number> {
  const buckets = await store.children(container);
  const stats = await Promise.all(buckets.map((b) => store.session.exists(`${container}/${b}`)));
  return stats.reduce((sum, s) => sum + (s?.numChildren ?? 0), 0);
}

/** The ready lanes: pointers per lane, and the ids of the active jobs (whose pointers are among them). */
interface ReadyView {
  lanes: Map<string, number>;
  active: string[];
}

async function readyView(store: QueueStore): Promise<ReadyView> {
  const [lanes, active] = await Promise.all([laneSizes(store), store.children(store.layout.claimsDir)]);
  return { lanes, active };
}

/** Pointers per ready lane (an active job's pointer among them). */
export async function laneSizes(store: QueueStore): Promise<Map<string, number>> {
  const { layout } = store;
  const lanes = await store.children(layout.ready);
  const sizes = await Promise.all(lanes.map((lane) => sizeOf(store, layout.lane(lane))));
  return new Map(lanes.map((lane, i) => [lane, sizes[i] ?? 0]));
}

/**
 * Active jobs per group of lanes. When one group alone holds pointers, every
 * active job is in it; otherwise the jobs' records say their lanes.
 */
async function activeIn(store: QueueStore, view: ReadyView, groupOf: (lane: string) => string) {
  const out = new Map<string, number>();
  if (view.active.length === 0) return out;
  const groups = new Set([...view.lanes].filter(([, n]) => n > 0).map(([lane]) => groupOf(lane)));
  if (groups.size <= 1) {
    for (const only of groups) out.set(only, view.active.length);
    return out;
  }
  for (let i = 0; i < view.active.length; i += RECORD_READS_IN_FLIGHT) {
    const batch = view.active.slice(i, i + RECORD_READS_IN_FLIGHT);
    for (const stored of await Promise.all(batch.map((id) => store.getJob(id)))) {
      const lane = stored?.record.lane;
      if (lane !== undefined) out.set(groupOf(lane), (out.get(groupOf(lane)) ?? 0) + 1);
    }
  }
  return out;
}

/** Waiting jobs of the lanes in `group`: their pointers less the active jobs among them. */
async function waitingIn(store: QueueStore, view: ReadyView, groupOf: (lane: string) => string, group: string) {
  let pointers = 0;
  for (const [lane, n] of view.lanes) if (groupOf(lane) === group) pointers += n;
  if (pointers === 0) return 0;
  const active = (await activeIn(store, view, groupOf)).get(group) ?? 0;
  return Math.max(0, pointers - active);
}

/** The hour containers of delayed jobs, with the time each begins. */
export async function hoursOf(store: QueueStore): Promise<{ path: string; start: number }[]> {
  return (await delayedHours(store)).map((path) => ({
    path,
    start: numberOf(path.slice(path.lastIndexOf('/') + 1)) * DELAY_WINDOW_MS,
  }));
}

/** Delayed pointer names of one hour, every bucket's. */
export async function delayedNames(store: QueueStore, hour: string): Promise<string[]> {
  const buckets = await store.children(hour);
  return (await Promise.all(buckets.map((b) => store.children(`${hour}/${b}`)))).flat();
}

/** Delayed jobs, only those due before `before` when given (BullMQ's delayedTimestamp). */
export async function delayedCount(store: QueueStore, before?: number): Promise<number> {
  const counts = await Promise.all(
    (await hoursOf(store)).map(async ({ path, start }) => {
      if (before === undefined || start + DELAY_WINDOW_MS <= before) return sizeOf(store, path);
      if (start >= before) return 0;
      return (await delayedNames(store, path)).filter((n) => dueOfDelayed(n) < before).length;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** BullMQ's getCounts: one count per type, in order; unknown types count 0 (an empty Redis key). */
export async function countStates(store: QueueStore, types: string[], delayedBefore?: number): Promise<number[]> {
  const { layout } = store;
  let view: Promise<ReadyView> | undefined;
  const ready = () => {
    view ??= readyView(store);
    return view;
  };
  const counts = new Map<string, Promise<number>>();
  const count = async (type: string): Promise<number> => {
    switch (type) {
      case 'wait':
      case 'prioritized':
        return waitingIn(store, await ready(), waitingStateOf, type === 'wait' ? 'waiting' : 'prioritized');
      case 'active':
        return (await store.children(layout.claimsDir)).length;
      case 'delayed':
        return delayedCount(store, delayedBefore);
      case 'completed':
      case 'failed':
        return sizeOf(store, layout.finishedDir(type));
      case 'waiting-children':
        return sizeOf(store, layout.childrenDir);
      default:
        return 0;
    }
  };
  return Promise.all(
    types.map(canonical).map((type) => {
      let c = counts.get(type);
      if (!c) {
        c = count(type);
        counts.set(type, c);
      }
      return c;
    }),
  );
}

/** The priority a lane serves (the lifo lane holds jobs without priority). */
function priorityOf(lane: string): string {
  return lane === LIFO_LANE ? '0' : String(Number(lane.slice(2)));
}

/** BullMQ's getCountsPerPriority: waiting jobs of each priority (0: without priority, lifo included). */
export async function countPerPriority(store: QueueStore, priorities: number[]): Promise<number[]> {
  const view = await readyView(store);
  return Promise.all(priorities.map((p) => waitingIn(store, view, priorityOf, String(Number(p)))));
}
