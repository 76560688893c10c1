/**
 * The leader's sweep of receipts left behind by dead clients (a receipt
 * settles a transaction whose reply was lost: see executor.ts).
 */
import type { ProtocolContext } from './context.js';
import { deleteUnit } from './write-cleanup.js';

/** Sweeps a receipt must have survived before it is taken as left behind by a dead client. */
export const RECEIPT_SWEEPS_KEPT = 10;

/**
 * Deletes receipts that earlier sweeps already saw RECEIPT_SWEEPS_KEPT
 * sweeps ago (the leader sweeps every minute: ten minutes, far longer than
 * any client takes to read back its own). `seen` carries what earlier
 * sweeps saw; `sweep` numbers this one.
 */
export async function sweepReceipts(store: ProtocolContext, seen: Map<string, number>, sweep: number): Promise<number> {
  const names = await store.children(store.layout.receiptsDir);
  const live = new Set(names);
  for (const name of seen.keys()) if (!live.has(name)) seen.delete(name);
  const old: string[] = [];
  for (const name of names) {
    const first = seen.get(name);
    if (first === undefined) seen.set(name, sweep);
    else if (sweep - first >= RECEIPT_SWEEPS_KEPT) old.push(name);
  }
  // no receipt: a receipt's name is its own, so a delete sent again after it committed fails alone (NoNode)
  const results = await store.executor.run(
    old.map((name) => deleteUnit(store.layout.receipt(name))),
    { receipt: false },
  );
  const done = old.filter((_, i) => results[i]?.ok);
  for (const name of done) seen.delete(name);
  return done.length;
}
