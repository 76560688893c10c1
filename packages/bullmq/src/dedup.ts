/**
 * BullMQ's deduplication (`opts.deduplication`, the `deduplicated` event,
 * getDeduplicationJobId, removeDeduplicationKey) on the zkq protocol's
 * deduplication keys (see dedup.ts in @zkq/core): the same keys zkq's own
 * Queue uses, so either front-end deduplicates against the other.
 */
import {
  deleteDeduplicationKey as deleteKey,
  type EnqueueEntry,
  enqueueJobs,
  getDeduplicationJobId as keptJob,
  removeDeduplicationKey as removeKey,
  type Turn,
  validateDeduplication,
} from '@zkq/core/internal';
import type { BackendContext } from './context.js';

/** Throws InvalidArgumentError for unusable `opts.deduplication` (BullMQ only checks that an id is given). */
export function checkDeduplication(deduplication: unknown): void {
  if (deduplication !== undefined) validateDeduplication(deduplication);
}

/**
 * Adds entries in order; resolves with the id BullMQ returns for each (a
 * deduplicated add: the kept job's). With a `turn`, after earlier calls' entries.
 */
export async function addEntries(ctx: BackendContext, entries: EnqueueEntry[], turn?: Turn): Promise<string[]> {
  const store = await ctx.store();
  const outcomes = await enqueueJobs(store, entries, turn);
  // BullMQ logs `duplicated` for an add whose custom id exists
  const duplicated = outcomes.filter((o) => o.kind === 'existing');
  if (duplicated.length > 0) {
    await store.publish(duplicated.map((o) => ({ event: 'duplicated', jobId: o.id, ts: Date.now() })));
  }
  return outcomes.map((o) => o.id);
}

/**
 * Throws InvalidArgumentError unless `id` is a usable deduplication id, as
 * zkq's Queue does (its key's name holds it URI-encoded: a lone surrogate
 * has no encoding).
 */
function checkId(id: unknown): void {
  validateDeduplication({ id }, 'deduplication');
}

/** The job a live key keeps, or null. */
export async function getDeduplicationJobId(ctx: BackendContext, id: string): Promise<string | null> {
  checkId(id);
  return keptJob(await ctx.store(), id);
}

/** Job.removeDeduplicationKey: deletes the key if it is live and keeps `jobId`; 1 when it did. */
export async function removeDeduplicationKey(ctx: BackendContext, id: string, jobId: string): Promise<number> {
  checkId(id);
  return removeKey(await ctx.store(), id, jobId);
}

/** Queue.removeDeduplicationKey: deletes the key whatever it keeps; 1 when a live key was deleted. */
export async function deleteDeduplicationKey(ctx: BackendContext, id: string): Promise<number> {
  checkId(id);
  return deleteKey(await ctx.store(), id);
}
