/**
 * BullMQ's `drained` event, logged once per time the queue runs dry. The
 * queue is dry from the last change of its claims on (the claims
 * directory's pzxid, which every claim and every finish moves on); the mark
 * that logs it once per dry time is the protocol's (protocol/drained.ts).
 */
import { isDrained } from './listing.js';
import { markDrained, readDrainedMark } from './protocol/drained.js';
import type { QueueStore } from './store.js';

/** Logs `drained` when the queue has nothing running and nothing waiting, unless it was logged for this time. */
export async function logDrained(store: QueueStore): Promise<boolean> {
  const claims = await store.session.exists(store.layout.claimsDir);
  if (!claims || claims.numChildren > 0) return false;
  const dry = String(claims.pzxid);
  const mark = await readDrainedMark(store);
  if (!mark || mark.data === dry) return false;
  if (!(await isDrained(store))) return false;
  return markDrained(store, mark, dry);
}
