/**
 * The job protocol, in one module. Read it top to bottom:
 *
 * 1. `../layout.ts`   every path (the znode layout is its header).
 * 2. `builders.ts`    the ops of every state change, pure, in a fixed order.
 * 3. `executor.ts`    the one transaction executor: packet budget, the owner
 *                     of each op, fences, unknown outcomes, event log.
 * 4. `containers.ts`  which bucket a new pointer goes to.
 * 5. `attempts.ts`    claim, renew, progress, finish; the leader's stale claims.
 * 6. `moves.ts`       enqueue-side moves: promotion, control (remove, retry,
 *                     promote, drain, clean), retention, the head scan.
 * 7. `limits.ts`      a queue's global limits: settings, the rate-limit window.
 * 8. `limited-claims.ts`  claims under those limits: slots and the window
 *                     written in the claim transaction itself.
 * 9. `flows.ts`       parents and children across queues: a parent's
 *                     dependency node, written at its version by every
 *                     change of a child's standing, in that change's own
 *                     transaction; the last child releases the parent.
 *                     `deps-entries.ts` reads its bucketed entries in pages;
 *                     `flow-adds.ts` writes a flow too large for one
 *                     transaction in several.
 * 10. `cancels.ts`    cancel requests: filed under the worker that runs the
 *                     job, only while it runs; that worker alone is woken.
 * 11. `trims.ts`      retention inside the finish: a finished set bounded
 *                     by a count is trimmed in the finish's transaction,
 *                     planned from a cached view of the set (`trim-view.ts`,
 *                     `trim-pointers.ts`); used by attempts.ts.
 * 12. `dedup-sweep.ts` deduplication keys whose ttl ran out or whose job is
 *                     gone, deleted by the leader at the versions read.
 *
 * A job is its record `jobs/<shard>/<id>` plus ONE pointer that says where it
 * is: a ready pointer (waiting, or active while a claim exists), a delayed
 * pointer, or a finished pointer. Every change of state rewrites (or
 * deletes) the record at the version read and swaps the pointer in the same
 * transaction, so a reader that raced it fails instead of acting twice.
 *
 * An attempt: the claim transaction checks the ready pointer (and, once per
 * transaction, the pause flag at the version it was read unset), creates the
 * EPHEMERAL claim and writes the record; the record's new version is the
 * attempt's fencing token. Renewals and progress rewrite the claim only while
 * the record is at the token. The finish writes the record at the token,
 * deletes pointer and claim and creates the new pointer. A revoked attempt
 * (the leader wrote the record) or a re-claimed one fails every later write.
 * A dead worker's claim vanishes with its session; its record still says
 * active, so the next claim counts a stall, and past maxStalledCount the job
 * fails instead of running again.
 */
export * from './attempts.js';
export * from './builders.js';
export * from './cancels.js';
export * from './child-detach.js';
export { Containers } from './containers.js';
export * from './dedup-sweep.js';
export * from './deps-entries.js';
export * from './event-listener.js';
export * from './event-trim.js';
export * from './executor.js';
export * from './flow-adds.js';
export * from './flows.js';
export * from './job-edit.js';
export * from './limited-claims.js';
export * from './limits.js';
export * from './logs.js';
export * from './moves.js';
export { prepareTrims } from './trims.js';
