/**
 * Walks of bucketed containers: lanes in serving order, buckets in order,
 * the pointers of a container bucket by bucket. Readers remove the empty
 * buckets and containers they meet (writers re-create them: see
 * containers.ts), so every listing stays small. Used by the head scan,
 * promotion, retention and the control operations.
 */
import { NoNodeError, NotEmptyError } from '../../zk/errors.js';
import { sortBySequence } from '../../zk/sequence.js';
import type { Watcher } from '../../zk/types.js';
import { dueOfDelayed, idOfDelayed, idOfPointer, LIFO_LANE, numberOf } from '../layout.js';
import { PLAIN_LANE } from './claim.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';

/** Lanes in the order they are served: lifo first, then by priority. */
export function sortLanes(lanes: string[]): string[] {
  return lanes.slice().sort((a, b) => (a === LIFO_LANE ? -1 : b === LIFO_LANE ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

/** How events and counts name the waiting state of a lane: only real priorities are `prioritized`. */
export function waitingStateOf(lane: string | undefined): 'waiting' | 'prioritized' {
  return lane === undefined || lane === PLAIN_LANE || lane === LIFO_LANE ? 'waiting' : 'prioritized';
}

/** The bucket names of a container, in order (newest first with `newestFirst`). */
export async function bucketsOf(
  store: ProtocolContext,
  container: string,
  watch?: Watcher,
  newestFirst = false,
): Promise<string[]> {
  return sortBuckets(await store.children(container, watch), newestFirst);
}

/** The bucket names among `names`, in order (newest first with `newestFirst`). */
export function sortBuckets(names: readonly string[], newestFirst: boolean): string[] {
  const buckets = names.filter((n) => n.startsWith('b-'));
  return buckets.sort((a, b) => (newestFirst ? numberOf(b) - numberOf(a) : numberOf(a) - numberOf(b)));
}

/** Deletes a node if it is empty; gone or not empty is fine. */
export async function removeIfEmpty(store: ProtocolContext, path: string): Promise<void> {
  await store.session.delete(path).catch((err) => {
    if (!(err instanceof NotEmptyError) && !(err instanceof NoNodeError)) throw err;
  });
}

/**
 * Deletes an empty container in a transaction behind `fence` (a leader's
 * election check: a deposed leader's removal fails with FencedError); gone
 * or not empty is fine. Resolves true when it is gone.
 */
export async function removeEmptyFenced(
  store: ProtocolContext,
  path: string,
  fence: () => ProtocolOp[],
): Promise<boolean> {
  const [result] = await store.executor.run([{ build: () => ({ ops: [{ op: 'delete', path }] }) }], {
    receipt: false,
    fence,
  });
  if (!result || result.ok) return true;
  if (result.error instanceof NoNodeError) return true;
  if (result.error instanceof NotEmptyError) return false;
  throw result.error;
}

/** A job found through its pointer. */
export interface Located {
  id: string;
  pointer: string;
}

/** The pointers of a container, bucket by bucket, in `chunk`-sized lists. */
export async function* pointersIn(
  store: ProtocolContext,
  container: string,
  chunk: number,
  order: 'sequence' | 'reverse' | 'due' = 'sequence',
): AsyncGenerator<Located[]> {
  for (const bucket of await bucketsOf(store, container, undefined, order === 'reverse')) {
    const dir = `${container}/${bucket}`;
    const names = await store.children(dir);
    const sorted =
      order === 'due'
        ? names.sort((a, b) => dueOfDelayed(a) - dueOfDelayed(b))
        : sortBySequence(names, undefined, order === 'reverse');
    const idOf = order === 'due' ? idOfDelayed : idOfPointer;
    for (let i = 0; i < sorted.length; i += chunk) {
      yield sorted.slice(i, i + chunk).map((n) => ({ id: idOf(n), pointer: `${dir}/${n}` }));
    }
  }
}

/** The hour containers of delayed jobs, earliest first. */
export async function delayedHours(store: ProtocolContext): Promise<string[]> {
  const { layout } = store;
  const out: string[] = [];
  for (const day of (await store.children(layout.delayedDir)).sort()) {
    const dir = `${layout.delayedDir}/${day}`;
    for (const hour of (await store.children(dir)).sort()) out.push(`${dir}/${hour}`);
  }
  return out;
}

/** Ready pointers of the lanes `laneFilter` accepts, in serving order. */
export async function* readyPointers(
  store: ProtocolContext,
  laneFilter: (lane: string) => boolean,
  chunk: number,
): AsyncGenerator<Located[]> {
  for (const lane of sortLanes(await store.children(store.layout.ready))) {
    if (!laneFilter(lane)) continue;
    yield* pointersIn(store, store.layout.lane(lane), chunk, lane === LIFO_LANE ? 'reverse' : 'sequence');
  }
}

/** Delayed pointers, earliest hour first, by due time inside a bucket. */
export async function* delayedPointers(store: ProtocolContext, chunk: number): AsyncGenerator<Located[]> {
  for (const hour of await delayedHours(store)) yield* pointersIn(store, hour, chunk, 'due');
}
