/**
 * Adding jobs with deduplication: each entry with options for a key creates
 * the key with itself; one that meets a key is settled against it in the
 * same run, at its place (protocol/dedup-take-over.ts).
 *
 * The one add of both front-ends (zkq's Queue, the BullMQ backend): an add
 * that finds its queue obliterated by another client sets it up again and
 * is planned again once (protocol/add.ts), as BullMQ on Redis makes the
 * keys again; a numbered job then takes an id of the new counter, never one
 * of a block the old counter gave (the new one hands those out again).
 */

import { keyOnAdd } from './protocol/dedup-keys.js';
import type { AddOutcome } from './protocol/dedup-take-over.js';
import { againstKey } from './protocol/dedup-take-over.js';
import type { Turn } from './runtime/call-order.js';
import type { EnqueueEntry, QueueStore } from './store.js';

export { type AddOutcome, type DedupAction, decide } from './protocol/dedup-take-over.js';

/**
 * Enqueues entries in order, as `store.enqueue` does, each with its
 * deduplication key when its record has options for one; an entry that
 * meets a key is settled against it in the same run, at its place
 * (`againstKey`). Resolves with one outcome per entry. `turn` keeps
 * pipelined calls in call order (see CallOrder); entries planned again
 * after the queue was set up again go after the calls made meanwhile, with
 * new ids when they are numbered (their records' ids are rewritten).
 */
export async function enqueueJobs(
  store: QueueStore,
  entries: readonly EnqueueEntry[],
  turn?: Turn,
): Promise<AddOutcome[]> {
  const settled = new Map<EnqueueEntry, AddOutcome>();
  // the key names the job's id: made for each round
  const keyed = (e: EnqueueEntry): EnqueueEntry => {
    const key = keyOnAdd(e.record);
    return key ? { ...e, dedup: { ...key, met: () => againstKey(store, e, (o) => settled.set(e, o)) } } : e;
  };
  const existingIds = new Set<string>();
  let pending = entries;
  for (let round = 1; ; round++) {
    const { existing, again } = await store.enqueue(pending.map(keyed), round === 1 ? turn : undefined);
    for (const id of existing) existingIds.add(id);
    if (again.length === 0) break;
    // the queue is set up again (store.enqueue): planned again once
    if (round > 1) throw (again[0] as { error: unknown }).error;
    pending = again.map((a) => pending[a.index] as EnqueueEntry);
    await renumber(store, pending);
  }
  return entries.map((e) => {
    const id = e.record.id;
    return existingIds.has(id) ? { id, kind: 'existing' } : (settled.get(e) ?? { id, kind: 'added' });
  });
}

/** Gives the numbered entries of `entries` new ids, off the counter of the queue as it is now. */
async function renumber(store: QueueStore, entries: readonly EnqueueEntry[]): Promise<void> {
  const numbered = entries.filter((e) => !e.custom);
  if (numbered.length === 0) return;
  const ids = await store.nextIds(numbered.length);
  numbered.forEach((e, i) => {
    e.record.id = ids[i] as string;
  });
}
