/** Names of sequential nodes: ZooKeeper appends a 10-digit, zero-padded counter. */

/** Length of the sequence suffix ZooKeeper appends to sequential names. */
export const SEQUENCE_DIGITS = 10;
const SEQUENTIAL_NAME = /\d{10}$/;

/** The sequence number of a sequential node name (its last 10 digits). */
export function sequenceOf(name: string): number {
  return Number(name.slice(-SEQUENCE_DIGITS));
}

/**
 * The sequential names among `names` (others are left out), optionally only
 * those with `prefix`, sorted by sequence number — never by prefix.
 */
export function sortBySequence(names: readonly string[], prefix?: string, descending = false): string[] {
  // The suffix has a fixed width, so its text sorts as its number does: each name is keyed once
  // by it and the engine's own string sort does the rest (no callback per comparison).
  const keyed: string[] = [];
  for (const n of names) {
    if (SEQUENTIAL_NAME.test(n) && (prefix === undefined || n.startsWith(prefix))) {
      keyed.push(n.slice(-SEQUENCE_DIGITS) + n);
    }
  }
  keyed.sort();
  if (descending) keyed.reverse();
  for (let i = 0; i < keyed.length; i++) keyed[i] = (keyed[i] as string).slice(SEQUENCE_DIGITS);
  return keyed;
}
