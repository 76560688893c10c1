/**
 * The lease: a worker renews its claims, and publishes progress, by
 * rewriting the claim node (fenced: only while the ready pointer is still at
 * the attempt's token), which moves the node's data version on; the leader judges a claim
 * by that version alone (stale.ts). A claim that vanished with an expired
 * session is re-created while the token holds. Called by the Worker's
 * renewer and its jobs' `updateProgress`.
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import { PayloadTooLargeError } from '../errors.js';
import { eventValue, type QueueEventRecord } from '../events.js';
import type { QueueLayout } from '../layout.js';
import { MAX_PROGRESS_BYTES } from '../progress.js';
import { type ClaimedJob, type ClaimOptions, claimPayload } from './claim.js';
import type { ProtocolContext } from './context.js';
import { OutcomeUnknownError, type ProtocolOp, type TxUnit } from './executor.js';

export { checkProgress, MAX_PROGRESS_BYTES } from '../progress.js';

/** A claim this worker holds, as the renewer sees it. */
export interface Lease {
  id: string;
  token: number;
  /** The attempt's ready pointer (with the token, it names this attempt of this job). */
  pointer: string;
  progress?: unknown;
  /** When the attempt started (`processedOn`, kept in the claim node through renewals). */
  at?: number;
  /** The attempt's slot and window (kept in the claim node through renewals). */
  slot?: string;
  window?: string;
}

/** The lease of a claimed job, with its latest progress. */
export function leaseOf(job: ClaimedJob, progress?: unknown): Lease {
  const lease: Lease = { id: job.record.id, token: job.token, pointer: job.pointer, progress };
  if (job.record.processedOn !== undefined) lease.at = job.record.processedOn;
  if (job.slot) lease.slot = job.slot;
  if (job.window) lease.window = job.window;
  return lease;
}

/**
 * Renews `leases` (fenced by each record's token); a claim that vanished with
 * an expired session is re-created while the token still holds. Resolves
 * with the leases no longer owned: their attempts must be aborted, and only
 * they (see `sameAttempt`): by the time this resolves, the same worker may
 * hold a new attempt of the same job. A renewal whose outcome could not be
 * learnt (its connection lost again and again) leaves its lease out: nothing
 * says the lease moved on, and the next renewal proves it again.
 */
export async function renewLeases(store: ProtocolContext, leases: Lease[], o: ClaimOptions): Promise<Lease[]> {
  const states = await renewLeaseStates(store, leases, o);
  return leases.filter((_, i) => states[i] === 'lost');
}

/**
 * What a renewal learnt of a lease: `renewed`; `lost` (the record or the
 * attempt's pointer moved on, or its claim could not be re-created); or
 * `unknown` (the outcome could not be learnt: the lease may hold or not).
 */
export type LeaseState = 'renewed' | 'lost' | 'unknown';

/** Renews `leases` as `renewLeases` does; resolves with what became of each, in order. */
export async function renewLeaseStates(
  store: ProtocolContext,
  leases: Lease[],
  o: ClaimOptions,
): Promise<LeaseState[]> {
  const units = leases.map((l) => leaseUnit(store, l, o, false));
  const results = await store.executor.run(units, {
    receipt: false,
    onConflict: reclaimVanished(store, o),
  });
  return leases.map((_, i) => {
    const r = results[i];
    if (r?.ok) return 'renewed';
    return r?.error instanceof OutcomeUnknownError ? 'unknown' : 'lost';
  });
}

/**
 * Whether `lease` names the attempt `job` holds: the same job, token and
 * ready pointer (a token alone repeats for a job removed and added again
 * under its id).
 */
export function sameAttempt(lease: Lease, job: ClaimedJob): boolean {
  return lease.id === job.record.id && lease.token === job.token && lease.pointer === job.pointer;
}

type LeaseUnit = TxUnit & {
  lease: Lease;
  reclaim: boolean;
  events: QueueEventRecord[] | undefined;
  /** Times it switched between renewal and re-claim (bounded: each switch means another writer moved the claim). */
  switches: number;
};

/** Switches between renewal and re-claim one lease may make in one run. */
const MAX_LEASE_SWITCHES = 4;

function leaseUnit(
  store: ProtocolContext,
  lease: Lease,
  o: ClaimOptions,
  reclaim: boolean,
  events?: QueueEventRecord[],
  switches = 0,
): LeaseUnit {
  const claim = claimPayload({
    worker: o.workerId,
    pointer: lease.pointer,
    token: lease.token,
    lockDuration: o.lockDuration,
    ...(lease.at === undefined ? {} : { at: lease.at }),
    progress: lease.progress,
    ...(lease.slot ? { slot: lease.slot } : {}),
    ...(lease.window ? { window: lease.window } : {}),
  });
  const r = { id: lease.id, token: lease.token, pointer: lease.pointer, claim, slot: lease.slot };
  const ops = reclaim ? reclaimOps(store.layout, r) : renewOps(store.layout, r);
  return { lease, reclaim, events, switches, build: () => (events ? { ops, events } : { ops }) };
}

/**
 * A renewal whose claim vanished with an expired session is sent again as a
 * re-claim. A re-claim that finds the claim there is sent again as a
 * renewal: its check of the record at the token passed (it comes first), and
 * any other attempt's claim would have moved the record on, so the claim is
 * this attempt's own, created by a renewal of the same lease that went first
 * or by this one, applied before its reply was lost (a create is not safe to
 * send twice).
 */
function reclaimVanished(store: ProtocolContext, o: ClaimOptions) {
  return (unit: LeaseUnit, err: unknown, op: ProtocolOp): LeaseUnit | undefined => {
    if (op.role !== 'claim' || unit.switches >= MAX_LEASE_SWITCHES) return undefined;
    const vanished = !unit.reclaim && err instanceof NoNodeError;
    const there = unit.reclaim && err instanceof NodeExistsError;
    return vanished || there
      ? leaseUnit(store, unit.lease, o, !unit.reclaim, unit.events, unit.switches + 1)
      : undefined;
  };
}

/**
 * Publishes an attempt's progress (fenced like a renewal, which it also is).
 * Throws PayloadTooLargeError for a value over MAX_PROGRESS_BYTES (nothing
 * written, the lease untouched). Resolves with what became of the lease:
 * `renewed` (the progress is written), `lost` (the job is no longer owned),
 * or `unknown` (the outcome could not be learnt, its connection lost again
 * and again: the progress may be written or not, and nothing says the lease
 * moved on; the next renewal proves it again).
 */
export async function reportProgress(store: ProtocolContext, lease: Lease, o: ClaimOptions): Promise<LeaseState> {
  const bytes = Buffer.byteLength(JSON.stringify(lease.progress ?? null));
  if (bytes > MAX_PROGRESS_BYTES) throw new PayloadTooLargeError(bytes, MAX_PROGRESS_BYTES, 'progress');
  const events = [{ event: 'progress', jobId: lease.id, data: eventValue(lease.progress), ts: Date.now() }];
  const [result] = await store.executor.run([leaseUnit(store, lease, o, false, events)], {
    receipt: false,
    onConflict: reclaimVanished(store, o),
  });
  if (result?.ok) return 'renewed';
  return result?.error instanceof OutcomeUnknownError ? 'unknown' : 'lost';
}

/**
 * Renew a lease (and publish progress): only while the attempt's ready
 * pointer is still at its token (a revoked or re-claimed job has moved it
 * on; a job removed, moved or added again has another pointer), rewrite the
 * claim node; its version change is what the leader watches for.
 */
export function renewOps(
  layout: QueueLayout,
  r: { id: string; token: number; pointer: string; claim: Buffer },
): ProtocolOp[] {
  return [
    { op: 'check', path: r.pointer, version: r.token },
    { op: 'setData', path: layout.claim(r.id), data: r.claim, role: 'claim' },
  ];
}

/**
 * Re-create a claim that vanished with an expired session, while the
 * attempt's pointer is still at the token, and its slot with it: a slot another attempt took
 * meanwhile fails the re-claim (the job is lost here, not run over the limit).
 */
export function reclaimOps(
  layout: QueueLayout,
  r: { id: string; token: number; pointer: string; claim: Buffer; slot?: string | undefined },
): ProtocolOp[] {
  const ops: ProtocolOp[] = [
    { op: 'check', path: r.pointer, version: r.token },
    { op: 'create', path: layout.claim(r.id), data: r.claim, mode: 'ephemeral', role: 'claim' },
  ];
  if (r.slot) ops.push({ op: 'create', path: layout.slot(r.slot), mode: 'ephemeral' });
  return ops;
}
