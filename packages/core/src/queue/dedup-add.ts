/**
 * Adding jobs with deduplication: each entry with options for a key creates
 * the key with itself; one that meets a key is settled against it in the
 * same run, at its place (protocol/dedup-take-over.ts).
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
 * pipelined calls in call order (see CallOrder).
 */
export async function enqueueJobs(
  store: QueueStore,
  entries: readonly EnqueueEntry[],
  turn?: Turn,
): Promise<AddOutcome[]> {
  const settled = new Map<EnqueueEntry, AddOutcome>();
  const keyed = entries.map((e): EnqueueEntry => {
    const key = keyOnAdd(e.record);
    return key ? { ...e, dedup: { ...key, met: () => againstKey(store, e, (o) => settled.set(e, o)) } } : e;
  });
  const { existing } = await store.enqueue(keyed, turn);
  const existingIds = new Set(existing);
  return entries.map((e) => {
    const id = e.record.id;
    return existingIds.has(id) ? { id, kind: 'existing' } : (settled.get(e) ?? { id, kind: 'added' });
  });
}
