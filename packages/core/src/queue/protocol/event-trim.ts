/**
 * Event log trim by hand (BullMQ's trimEvents, and custom events' own
 * bound): the log `events/log` is cut to its newest nodes. The executor
 * trims it to EVENTS_KEEP on its own as it writes; this keeps fewer.
 */
import { sequenceOf } from '../layout.js';
import type { ProtocolContext } from './context.js';
import { deleteUnit } from './executor.js';

/**
 * Deletes all but the newest `keep` nodes of the event log (each holds the
 * events of one transaction). Resolves with the number of nodes deleted.
 */
export async function trimEventLog(store: ProtocolContext, keep: number): Promise<number> {
  const { layout } = store;
  const names = (await store.children(layout.eventLog)).sort((a, b) => sequenceOf(a) - sequenceOf(b));
  const doomed = names.slice(0, Math.max(0, names.length - Math.max(0, Math.floor(keep) || 0)));
  if (doomed.length === 0) return 0;
  // read back by its receipt: sent again after a lost reply, each delete failed on the node it had deleted
  const results = await store.executor.run(doomed.map((n) => deleteUnit(`${layout.eventLog}/${n}`)));
  return results.filter((r) => r.ok).length;
}
