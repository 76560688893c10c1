/**
 * Deduplication keys (BullMQ's `opts.deduplication`): what a key is and when
 * it is live (protocol/dedup-keys.ts), an add that meets one
 * (protocol/dedup-take-over.ts), releasing one (protocol/dedup-release.ts),
 * and a finish handing one on (protocol/dedup-handoff.ts).
 */
export * from './protocol/dedup-handoff.js';
export * from './protocol/dedup-keys.js';
export * from './protocol/dedup-release.js';
