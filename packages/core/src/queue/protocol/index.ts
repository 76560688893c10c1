/**
 * The job protocol: every state change of a job is one transition file
 * here, which plans from what it read and builds its ops; the executor
 * sends them. Read it in this order.
 *
 * Foundations
 * - `../layout.ts`       every path (the znode layout is its header); the
 *                        names inside it: `../znode-names.ts`.
 * - `context.ts`         what a transition is given of a queue
 *                        (ProtocolContext; QueueStore implements it).
 * - `executor.ts`        the one transaction executor: packet budget, the
 *                        owner of each op, fences, unknown outcomes, events;
 *                        `replan.ts` its one retry policy for writes planned
 *                        from a read (runPlanned, runPlannedBatch);
 *                        `units.ts` what it is given; `write-cleanup.ts`, `write-errors.ts`.
 * - `builders.ts`        ops shared by several transitions (pointers, moves,
 *                        removals, trims, dedup keys, limit checks), pure.
 * - `containers.ts`      which bucket a new pointer goes to.
 * - `walks.ts`           lanes and buckets in order; pointers bucket by bucket.
 * - `moves.ts`           a move as one unit (record at the version read,
 *                        pointer swapped), written by applyMoves.
 *
 * Adding, and queue control (Queue, Job, BullMQ's backend)
 * - `add.ts`             add: a record and its one pointer, in as few
 *                        transactions as fit.
 * - `dedup-keys.ts`      what a deduplication key is and when it is live;
 *                        `dedup-take-over.ts` an add that meets one;
 *                        `dedup-release.ts` one freed (by hand, with its
 *                        job); `dedup-handoff.ts` one a finish hands on.
 * - `remove-job.ts`, `retry-job.ts`, `promote-job.ts`, `drain.ts`
 *                        remove, retry, promote one job or many; drain and
 *                        clean; over `job-reads.ts` (a job's pointer, its
 *                        record) and `flow-bulk-removal.ts` (jobs of flows).
 * - `pause.ts`, `publish.ts`, `server-time.ts`
 *                        the pause flag, events on their own, ZooKeeper's
 *                        time (a write to the clock node).
 * - `ids.ts`             a block of job ids off the queue's counter;
 *                        `worker-registration.ts` a live worker's node.
 * - `migrate.ts`         a queue of layout 2 moved to layout 3 (`zkq migrate`).
 *
 * An attempt (JobSource, the Worker's renewer and Finisher, the leader)
 * - `head.ts`            the head scan a worker claims from (JobSource).
 * - `claim.ts`           claim: ready -> active, the claim node created, the
 *                        ready pointer's new version the attempt's token (JobSource).
 * - `claim-read.ts`      the claimed records read in the claim multi's flight,
 *                        used only when certainly read after the claim.
 * - `claim-release.ts`   a claim of a job found not claimable released at its
 *                        pointer's token, only while its node, read again,
 *                        is its own.
 * - `attempt-counts.ts`  what an attempt counts (starts, stalls) by its pointer's
 *                        version, and how a claimed job reads; pure.
 * - `limited-claims.ts`  the same under global limits, slot and window
 *                        written in the claim transaction (`limits.ts`).
 * - `lease.ts`           renew and progress: the claim rewritten at the token;
 *                        a vanished claim re-created (the Worker's renewer).
 * - `finish-plan.ts`     what an outcome writes (record, place, events), pure.
 * - `finish.ts`          finish: completed, failed, retried, delayed or parked
 *                        in waiting-children, at the token (the Finisher).
 * - `stale.ts`           the leader judges leases by the claim's version and
 *                        revokes stale ones: active -> waiting, a stall more.
 * - `orphan-claims.ts`   a stale claim whose job is gone (or added again
 *                        since) is removed, fenced, not revoked (the leader).
 * - `quarantine.ts`      an unreadable record moved to failed (JobSource).
 * - `cancels.ts`         cancel requests, filed under the worker running the
 *                        job, only while it runs (Queue, the Worker).
 * - `logs.ts`            a job's log lines beside its record.
 *
 * Delayed and finished jobs
 * - `promote-due.ts`     delayed -> waiting once due (Housekeeper).
 * - `trims.ts`           a count bound kept inside the finish's transaction,
 *                        planned from `trim-view.ts` and `trim-pointers.ts`.
 * - `trim-finished.ts`   retention by count or age outside it (Trimmer).
 *
 * Flows: a parent's dependency node, written at its version by every change
 * of a child's standing, in that change's own transaction
 * - `flow-parent.ts`     the node read and written; a parent released.
 * - `flow-settle.ts`     a child done for good (the last one releases the
 *                        parent), pending again on retry; a parent parking.
 * - `flow-detach.ts`     a pending child removed or detached.
 * - `flow-plan.ts`, `flow-existing-parent.ts`, `flow-add.ts`
 *                        a flow planned and added in one transaction
 *                        (FlowProducer, `Queue.add` with a parent);
 *                        `flow-add-split.ts` one too large for that, in
 *                        several; `deps-entries.ts` reads the entries.
 * - `flow-read.ts`       a parent's dependencies, read.
 * - `flow-sweep.ts`      a gone parent's node deleted (the leader).
 *
 * The leader's sweeps: `dedup-sweep.ts` (keys past their ttl or whose job
 * is gone), `receipt-sweep.ts` (receipts of dead clients), orphan
 * dependency nodes (`flow-sweep.ts`), log nodes (`logs.ts`), cancel
 * requests (`cancels.ts`), over `shard-sweep.ts`.
 *
 * A job is its record `jobs/<shard>/<id>` plus ONE pointer that says where it
 * is: a ready pointer (waiting, or active while a claim exists), a delayed
 * pointer, or a finished pointer. Every change of state rewrites (or
 * deletes) the record at the version read and swaps the pointer in the same
 * transaction, so a reader that raced it fails instead of acting twice.
 *
 * An attempt: the claim transaction (behind the pause flag, at the version it
 * was read unset) creates the EPHEMERAL claim and writes the ready pointer
 * blind, reading nothing first; the pointer's new version is the attempt's
 * fencing token, and the record is read after. Renewals and progress rewrite
 * the claim only while the pointer is at the token. The finish deletes the
 * pointer at the token, writes the record at the version read, deletes the
 * claim and creates the new pointer. A revoked attempt (the leader wrote the
 * pointer) or a re-claimed one fails every later write. A dead worker's
 * claim vanishes with its session; the next claim of the job gets a token
 * past the claims its record counted, so it counts a stall, and past
 * maxStalledCount the job fails instead of running again. A change of a
 * waiting job checks that no claim is there (builders.ts `unclaimedOps`).
 */

export type { OpResult } from '../../zk/types.js';
export * from './attempt-counts.js';
export * from './builders.js';
export * from './cancels.js';
export * from './child-detach.js';
export * from './claim.js';
export { Containers } from './containers.js';
export type { ClaimInfo, ProtocolContext, StoredJob } from './context.js';
export * from './dedup-sweep.js';
export * from './deps-entries.js';
export * from './event-listener.js';
export * from './event-trim.js';
export * from './executor.js';
export * from './finish.js';
export * from './finish-plan.js';
export * from './flow-add.js';
export * from './flow-add-split.js';
export { type DetachOptions, detachOps, mayBePendingChild } from './flow-detach.js';
export { existingParentShare, type ShareMemo } from './flow-existing-parent.js';
export { childKey, type DepsNode, joinBuilt, type Settlement } from './flow-parent.js';
export * from './flow-plan.js';
export * from './flow-read.js';
export * from './flow-settle.js';
export { DROP_INLINE, dropDepsOps, sweepOrphanDeps } from './flow-sweep.js';
export * from './head.js';
export * from './job-edit.js';
export * from './lease.js';
export * from './limited-claims.js';
export * from './limits.js';
export * from './logs.js';
export * from './migrate.js';
export * from './moves.js';
export { type JudgedClaim, type OrphanRemoval, removeOrphanClaimOps } from './orphan-claims.js';
export * from './promote-due.js';
export * from './quarantine.js';
export * from './receipt-sweep.js';
export * from './stale.js';
export * from './trim-finished.js';
export { prepareTrims } from './trims.js';
export {
  delayedHours,
  delayedPointers,
  type Located,
  pointersIn,
  readyPointers,
  sortLanes,
  waitingStateOf,
} from './walks.js';
