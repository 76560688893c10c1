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
  const sorted = names
    .filter((n) => SEQUENTIAL_NAME.test(n) && (prefix === undefined || n.startsWith(prefix)))
    .sort((a, b) => sequenceOf(a) - sequenceOf(b));
  return descending ? sorted.reverse() : sorted;
}
