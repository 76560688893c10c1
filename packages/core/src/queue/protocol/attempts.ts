/**
 * An attempt's life in the store: claim, renew (and progress), finish; and
 * the leader's side of it: judging a lease stale, revoking it.
 *
 * Leases compare no two clocks. A worker renews by rewriting its claim node
 * (fenced: only while the record is still at its token), which moves the
 * node's data version on. The leader remembers, per claim node (its czxid),
 * the version it last saw and when it saw it change, on its own monotonic
 * clock; a version unchanged for the claim's lease duration is stale, and
 * the revocation deletes the claim *at that version*, so a renewal that
 * lands in between wins.
 */
import { performance } from 'node:perf_hooks';
import { BadVersionError, NodeExistsError, NoNodeError, type ZooKeeperError } from '../../zk/errors.js';
import type { OpResult } from '../../zk/types.js';
import { type HandoffMode, handoffAfterConflict, withHandoff } from '../dedup.js';
import { LostJobError, PayloadTooLargeError } from '../errors.js';
import { eventValue, type QueueEventRecord } from '../events.js';
import { MAX_DELAY_MS } from '../options.js';
import { decodeRecord, encodeRecord, type JobRecord, MAX_RECORD_BYTES } from '../record.js';
import { cutReason, keptStacktrace, tooLargeReason } from '../sizes.js';
import type { KeepJobs } from '../types.js';
import {
  claimOps,
  type Destination,
  fillOp,
  finishOps,
  moveOps,
  parkedPath,
  pauseCheckOp,
  reclaimOps,
  releaseOps,
  renewOps,
  revokeOps,
} from './builders.js';
import type { ProtocolContext as QueueStore } from './context.js';
import {
  type Built,
  FencedError,
  OutcomeUnknownError,
  type ProtocolOp,
  type TxUnit,
  type UnitResult,
} from './executor.js';
import { dropDepsOps, joinBuilt, mayBePendingChild, parkShare, type Settlement, settleChildOps } from './flows.js';
import { dropLogsOfGoneJobs, writeLogs } from './logs.js';
import { dropTrim, sendingTrim, settleTrim, TrimBatch, type TrimState, trimShare, unsentTrim } from './trims.js';

/** Largest progress value (serialized) a job may report; larger ones are refused with PayloadTooLargeError. */
export const MAX_PROGRESS_BYTES = 64 * 1024;
/** Lane of jobs without priority. */
export const PLAIN_LANE = 'p-0000000000';

/** A ready pointer seen at the head of the queue. */
export interface Candidate {
  id: string;
  /** Path of the ready pointer. */
  pointer: string;
  lane: string;
}

/** A job this worker owns, with its fencing token. */
export interface ClaimedJob {
  record: JobRecord;
  token: number;
  pointer: string;
  /**
   * When the claim was sent, on this process's monotonic clock
   * (`performance.now()`): the leader cannot revoke the claim sooner than
   * one lease after it, so a processor started within that time starts on a
   * claim that is still ours.
   */
  claimedAt: number;
  /** The job was active when claimed: its previous attempt's worker died (a stall, counted in the record). */
  stalled: boolean;
  /** The record's czxid: which job of this id it is (its log node's owner, logs.ts). */
  czxid: number;
  /** The global-concurrency slot this attempt holds (`s-<k>`), claimed under a global concurrency. */
  slot?: string;
  /** The id of the rate-limit window that counted this attempt, claimed under a rate limit. */
  window?: string;
}

export interface ClaimOptions {
  workerId: string;
  lockDuration: number;
  /**
   * Asked right before the claim is sent: true when the worker may no longer
   * take jobs (paused, closing). A pause seen while the candidates were read
   * (its watch fires before the add's) then claims nothing.
   */
  held?: () => boolean;
  /**
   * The version of the queue's `meta` node at which the pause flag was last
   * read unset (undefined: not checked). Each claim transaction checks it,
   * so a pause that commits while the claim is on its way fails the claim
   * (its candidates are `left`), and `pause()` resolving means no claim
   * commits after it.
   */
  pauseVersion?: () => number | undefined;
}

export interface ClaimResult {
  /** Jobs now owned. One whose `record.stalledCounter` passed maxStalledCount must be failed, not run. */
  claimed: ClaimedJob[];
  /**
   * Candidates that were gone, taken or unreadable. `gone`: its record is
   * gone; `stale`: its record, at this version, is in a state a ready
   * pointer never goes with (finished, delayed...): a pointer left behind.
   */
  skipped: { candidate: Candidate; error?: unknown; gone?: true; stale?: number }[];
  /** Candidates not claimed, none taken by another worker: held back or paused meanwhile, still there to take. */
  left: Candidate[];
}

/** What a claim node holds. */
export interface ClaimInfo {
  /** Worker id holding the job. */
  worker: string;
  /** The record version of this attempt (fencing token). */
  token: number;
  /** The lease: the leader revokes a claim not renewed for this long, ms. */
  lockDuration: number;
  /** Latest progress reported by the processor. */
  progress?: unknown;
  /** The global-concurrency slot held (deleted with this node). */
  slot?: string;
  /** The rate-limit window that counted the attempt. */
  window?: string;
}

export function claimPayload(info: ClaimInfo): Buffer {
  return Buffer.from(JSON.stringify(info));
}

/** A candidate read and ready to claim: its updated record, the token it will get. */
export interface PreparedClaim {
  candidate: Candidate;
  updated: JobRecord;
  /** The record version read (the claim writes at it). */
  version: number;
  /** The record's czxid. */
  czxid: number;
  token: number;
  stalled: boolean;
  record: Buffer;
  /** `active`, after `stalled` when a dead worker's job is taken over (BullMQ logs both). */
  events: QueueEventRecord[];
}

/**
 * Reads the candidates' records and prepares their claims; candidates gone,
 * not claimable or unreadable go to `result.skipped`.
 */
export async function prepareClaims(
  store: QueueStore,
  candidates: Candidate[],
  o: ClaimOptions,
  result: ClaimResult,
): Promise<PreparedClaim[]> {
  const reads = await readRecords(store, candidates, result);
  const now = Date.now();
  const prepared: PreparedClaim[] = [];
  for (const r of reads) {
    // Only a waiting job (or a dead worker's active one) can be claimed; a stale view may list others.
    if (r.record.state !== 'waiting' && r.record.state !== 'active') {
      // every move of a job swaps its pointer in the transaction that writes its record, so a
      // ready pointer beside this record at this version is one left behind (an id added again)
      result.skipped.push({ candidate: r.candidate, stale: r.version });
      continue;
    }
    const updated: JobRecord = {
      ...r.record,
      state: 'active',
      // an active record without a claim: its last worker died mid-attempt
      stalledCounter: r.record.stalledCounter + (r.record.state === 'active' ? 1 : 0),
      attemptsStarted: r.record.attemptsStarted + 1,
      processedOn: now,
      processedBy: o.workerId,
    };
    prepared.push({
      candidate: r.candidate,
      updated,
      version: r.version,
      czxid: r.czxid,
      token: r.version + 1,
      stalled: r.record.state === 'active',
      record: encodeRecord(updated),
      events: [
        ...(r.record.state === 'active' ? [{ event: 'stalled', jobId: r.candidate.id, prev: 'active', ts: now }] : []),
        { event: 'active', jobId: r.candidate.id, prev: 'waiting', ts: now },
      ],
    });
  }
  return prepared;
}

/** The ops of one prepared claim, holding `limits` (the slot and window it was admitted by) when limited. */
export function preparedClaimOps(
  store: QueueStore,
  c: PreparedClaim,
  o: ClaimOptions,
  limits: { slot?: string | undefined; window?: string | undefined } = {},
): ProtocolOp[] {
  const claim = claimPayload({ worker: o.workerId, token: c.token, lockDuration: o.lockDuration, ...limits });
  return claimOps(store.layout, {
    id: c.candidate.id,
    pointer: c.candidate.pointer,
    version: c.version,
    record: c.record,
    claim,
    slot: limits.slot,
  });
}

/** What an attempt holds once its claim committed. */
export function claimedJob(
  c: PreparedClaim,
  claimedAt: number,
  limits: { slot?: string | undefined; window?: string | undefined } = {},
): ClaimedJob {
  const job: ClaimedJob = {
    record: c.updated,
    token: c.token,
    pointer: c.candidate.pointer,
    claimedAt,
    stalled: c.stalled,
    czxid: c.czxid,
  };
  if (limits.slot) job.slot = limits.slot;
  if (limits.window) job.window = limits.window;
  return job;
}

/**
 * Claims as many of `candidates` as it can, in as few transactions as fit
 * (no limit applies). Each transaction checks the pause flag's version
 * first (`pauseVersion`): when it moved on, that transaction and the ones
 * after it claim nothing, and their candidates are `left`.
 */
export async function claimJobs(store: QueueStore, candidates: Candidate[], o: ClaimOptions): Promise<ClaimResult> {
  const result: ClaimResult = { claimed: [], skipped: [], left: [] };
  const claims = await prepareClaims(store, candidates, o, result);
  if (o.held?.()) {
    result.left.push(...claims.map((c) => c.candidate));
    return result;
  }
  const units = claims.map((c) => {
    const ops = preparedClaimOps(store, c, o);
    return { claim: c, build: () => ({ ops, events: c.events }) };
  });
  const claimedAt = performance.now();
  // read once: every transaction of the run (one sent again too) checks the version the claim was decided at,
  // not the flag as known by then (unset, or read again paused)
  const pauseVersion = o.pauseVersion?.();
  const guarded = pauseVersion !== undefined;
  const fence: ProtocolOp[] = guarded ? [{ ...pauseCheckOp(store.layout, pauseVersion), role: 'fence' }] : [];
  const written = await store.executor.run(units, {
    recheck: (left) => takenSince(store, left),
    // the pause check is the run's fence: one op per transaction; claims committed before it failed stand
    ...(guarded ? { fence: () => fence, settleAll: true } : {}),
  });
  let stopped: unknown;
  written.forEach((w, i) => {
    const c = claims[i] as PreparedClaim;
    if (w.ok) result.claimed.push(claimedJob(c, claimedAt));
    else if (w.error instanceof FencedError) result.left.push(c.candidate);
    else if (guarded && stoppedRun(w.error)) {
      stopped ??= w.error;
      result.left.push(c.candidate);
    } else result.skipped.push({ candidate: c.candidate, ...(isConflict(w.error) ? {} : { error: w.error }) });
  });
  // a failure that stopped the run rejects the claim, as an unguarded run does, unless claims committed first
  if (stopped !== undefined && result.claimed.length === 0) throw stopped;
  return result;
}

/** An error that stopped a whole run (settled on every unit left), not the failure of one claim. */
function stoppedRun(err: unknown): boolean {
  return !isConflict(err) && !(err instanceof PayloadTooLargeError) && !(err instanceof OutcomeUnknownError);
}

/**
 * After one claim of a batch met another worker's, which of the others were
 * taken too since their records were read (their versions moved on): one
 * read of them all, so that the batch is sent again without them.
 */
async function takenSince(store: QueueStore, left: { claim: PreparedClaim }[]): Promise<(Error | undefined)[]> {
  const { session, layout } = store;
  const replies = await session.readMulti(
    left.map(({ claim }) => ({ op: 'getData' as const, path: layout.job(claim.candidate.id) })),
  );
  return left.map(({ claim }, i) => {
    const r = replies[i];
    const path = layout.job(claim.candidate.id);
    if (!r?.ok) return r?.error instanceof NoNodeError ? new BadVersionError(path) : undefined;
    return r.stat.version !== claim.version ? new BadVersionError(path) : undefined;
  });
}

/** Records read per request: a claim batch is read in one or a few read-only multis. */
export const CLAIM_READ_BATCH = 50;

/** The candidates' records, read in batches; unreadable ones go to `result.skipped`. */
async function readRecords(store: QueueStore, candidates: Candidate[], result: ClaimResult) {
  const { session, layout } = store;
  const reads: { candidate: Candidate; record: JobRecord; version: number; czxid: number }[] = [];
  for (let i = 0; i < candidates.length; i += CLAIM_READ_BATCH) {
    const batch = candidates.slice(i, i + CLAIM_READ_BATCH);
    const replies = await session.readMulti(batch.map((c) => ({ op: 'getData' as const, path: layout.job(c.id) })));
    batch.forEach((candidate, j) => {
      const reply = replies[j];
      if (!reply?.ok) {
        // no record: a job removed since the head was listed, or a pointer left without one (not a collision)
        if (reply?.error instanceof NoNodeError) result.skipped.push({ candidate, gone: true });
        else result.skipped.push({ candidate, ...(reply ? { error: reply.error } : {}) });
        return;
      }
      try {
        reads.push({
          candidate,
          record: decodeRecord(reply.data, layout.job(candidate.id)),
          version: reply.stat.version,
          czxid: reply.stat.czxid,
        });
      } catch (error) {
        result.skipped.push({ candidate, error });
      }
    });
  }
  return reads;
}

/** A failure that means another writer was first (not an error to report). */
export function isConflict(err: unknown): boolean {
  return (
    (err as ZooKeeperError | undefined)?.opIndex !== undefined ||
    err instanceof NodeExistsError ||
    err instanceof BadVersionError
  );
}

// ---- renewals and progress --------------------------------------------------

/** A claim this worker holds, as the renewer sees it. */
export interface Lease {
  id: string;
  token: number;
  /** The attempt's ready pointer (with the token, it names this attempt of this job). */
  pointer: string;
  progress?: unknown;
  /** The attempt's slot and window (kept in the claim node through renewals). */
  slot?: string;
  window?: string;
}

/** The lease of a claimed job, with its latest progress. */
export function leaseOf(job: ClaimedJob, progress?: unknown): Lease {
  const lease: Lease = { id: job.record.id, token: job.token, pointer: job.pointer, progress };
  if (job.slot) lease.slot = job.slot;
  if (job.window) lease.window = job.window;
  return lease;
}

/**
 * Renews `leases` (fenced by each record's token); a claim that vanished with
 * an expired session is re-created while the token still holds. Resolves
 * with the leases no longer owned: their attempts must be aborted, and only
 * they (see `sameAttempt`): by the time this resolves, the same worker may
 * hold a new attempt of the same job.
 */
export async function renewLeases(store: QueueStore, leases: Lease[], o: ClaimOptions): Promise<Lease[]> {
  const units = leases.map((l) => leaseUnit(store, l, o, false));
  const results = await store.executor.run(units, {
    receipt: false,
    onConflict: reclaimVanished(store, o),
  });
  return leases.filter((_, i) => !results[i]?.ok);
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
  store: QueueStore,
  lease: Lease,
  o: ClaimOptions,
  reclaim: boolean,
  events?: QueueEventRecord[],
  switches = 0,
): LeaseUnit {
  const claim = claimPayload({
    worker: o.workerId,
    token: lease.token,
    lockDuration: o.lockDuration,
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
function reclaimVanished(store: QueueStore, o: ClaimOptions) {
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
 * written, the lease untouched); resolves false when the job is no longer owned.
 */
export async function reportProgress(store: QueueStore, lease: Lease, o: ClaimOptions): Promise<boolean> {
  const bytes = Buffer.byteLength(JSON.stringify(lease.progress ?? null));
  if (bytes > MAX_PROGRESS_BYTES) throw new PayloadTooLargeError(bytes, MAX_PROGRESS_BYTES, 'progress');
  const events = [{ event: 'progress', jobId: lease.id, data: eventValue(lease.progress), ts: Date.now() }];
  const [result] = await store.executor.run([leaseUnit(store, lease, o, false, events)], {
    receipt: false,
    onConflict: reclaimVanished(store, o),
  });
  return result?.ok === true;
}

// ---- finishing --------------------------------------------------------------

/** Where a finished attempt sends its job. */
export type Outcome =
  | { kind: 'completed'; returnvalue: unknown; remove: boolean }
  | { kind: 'failed'; reason: string; stacktrace: string[]; remove: boolean }
  /** A parent waits for its children (moveToWaitingChildren); it is claimed again once they are done. */
  | { kind: 'waiting-children' }
  | {
      kind: 'retry';
      reason: string;
      stacktrace: string[];
      /** 0: waiting again now; else delayed until this time on ZooKeeper's clock. */
      due: number;
      /** Not a failed attempt (a job the processor moved back itself): attemptsMade stays. */
      skipAttempt?: boolean;
    };

/** One attempt's result, ready to be written. */
export interface Finish {
  job: ClaimedJob;
  outcome: Outcome;
  /** The attempt's log lines: written to the job's log node (logs.ts) before the finish, never to the record. */
  logs?: string[];
  /**
   * The job's log node is known to be there (its lines were written while it
   * ran): a finish that removes the job deletes it right after, rather than
   * leaving it to the leader's sweep.
   */
  logged?: boolean;
  progress?: unknown;
  /**
   * Set on a finish written in place of one too large to store (finishJobs):
   * `lean`, the same outcome without the attempt's logs, progress and stack;
   * `failed`, a final failure with a short reason.
   */
  sizeFallback?: 'lean' | 'failed';
  /**
   * The bounds of the finished set the job goes to (removeOnComplete or
   * removeOnFail): a count is kept inside the finish (trims.ts); an age, or
   * no bound, is left to the caller (the Trimmer).
   */
  keep?: KeepJobs;
}

/**
 * What became of each finish in a batch. `trimLater`: the finished set's
 * count bound was not enforced in the finish's transaction (a trim should follow).
 */
export type FinishResult =
  | {
      ok: true;
      trimLater?: true;
      /** The outcome written instead of the one asked for, too large to store: a final failure (sizes.ts). */
      replaced?: Outcome;
    }
  | { ok: false; error: unknown };

/**
 * The limit of a record written by a size fallback: the record as claimed
 * (under MAX_RECORD_BYTES) plus a short reason and the finish's fields.
 */
const FALLBACK_RECORD_BYTES = MAX_RECORD_BYTES + 16 * 1024;

type FinishUnit = TxUnit & {
  finish: Finish;
  withClaim: boolean;
  handoff: HandoffMode;
  round: number;
  trim: FinishTrim;
};

/** A finish's share of its batch's retention planning (kept when its unit is replaced). */
interface FinishTrim {
  batch: TrimBatch;
  state: TrimState;
}

/**
 * Writes many finishes, as few transactions as fit. A finish whose token no
 * longer matches fails with LostJobError; one whose claim node alone is gone
 * (an expired session, nobody claimed the job since) is written without it.
 * The final finish of a job added with deduplication also deletes its key
 * without ttl, or hands it on with keepLastIfActive (dedup.ts); a key
 * changed meanwhile plans it again.
 */
export async function finishJobs(store: QueueStore, batch: Finish[]): Promise<FinishResult[]> {
  // a transaction cannot trim the pointers it creates: at most `count` of them go in one
  const size = Math.min(batch.length, ...batch.map((f) => keptCount(f) ?? batch.length));
  // a park's lines are written once it is (one that finds no pending child goes on, and logs on)
  const parks = (f: Finish) => f.outcome.kind === 'waiting-children';
  // a job removed as it finishes takes its lines with it: they would only wait for the sweep
  for (const f of batch) if (removedAtOnce(f)) delete f.logs;
  await writeAttemptLogs(
    store,
    batch.filter((f) => !parks(f)),
  );
  const out: FinishResult[] = [];
  if (size >= batch.length) out.push(...(await finishBatch(store, batch)));
  else {
    for (let i = 0; i < batch.length; i += size) out.push(...(await finishBatch(store, batch.slice(i, i + size))));
  }
  await writeAttemptLogs(
    store,
    batch.filter((f, i) => parks(f) && out[i]?.ok),
  );
  const done = await failOversized(store, batch, out);
  const gone = batch.filter((f, i) => {
    const r = done[i];
    return f.logged && r?.ok && removedAtOnce({ ...f, outcome: r.replaced ?? f.outcome });
  });
  // the sweep deletes them otherwise: a failure here loses nothing
  if (gone.length > 0)
    await dropLogsOfGoneJobs(
      store,
      gone.map((f) => f.job.record.id),
    ).catch(() => undefined);
  return done;
}

/**
 * The attempts' log lines go to their jobs' log nodes, all in one read and
 * one transaction (an attempt revoked meanwhile keeps its lines, as in
 * BullMQ); a failure to write them is not the finish's: its lines are lost,
 * its outcome is written.
 */
async function writeAttemptLogs(store: QueueStore, batch: Finish[]): Promise<void> {
  const writes = batch.flatMap((f) => {
    if (!f.logs?.length) return [];
    const { record, czxid } = f.job;
    const lines = f.logs;
    delete f.logs; // written once, whatever follows (a fallback, a batch cut in two)
    return [{ owner: { id: record.id, czxid, keepLogs: record.opts.keepLogs }, lines }];
  });
  if (writes.length === 0) return;
  // the outcome matters more than the lines: a write that failed for good (the session
  // closed, say; a lost reply is read back) does not keep the finish from being written
  await writeLogs(store, writes).catch(() => undefined);
}

/**
 * Finishes refused for their size (a record over its limit, a unit over a
 * transaction; nothing was sent) are written again: first with their
 * outcome but without what the attempt added beside it (its logs, progress
 * and stack), then, if that is still too large, as a failure with a short
 * reason, final whatever attempts are left. The job is never left active
 * to run again once its lease runs out.
 */
async function failOversized(store: QueueStore, batch: Finish[], out: FinishResult[]): Promise<FinishResult[]> {
  const again: { index: number; finish: Finish }[] = [];
  out.forEach((r, index) => {
    const finish = !r.ok && r.error instanceof PayloadTooLargeError && sizeFallback(batch[index] as Finish, r.error);
    if (finish) again.push({ index, finish });
  });
  if (again.length === 0) return out;
  const results = await finishJobs(
    store,
    again.map((a) => a.finish),
  );
  again.forEach(({ index, finish }, k) => {
    const r = results[k] as FinishResult;
    out[index] = r.ok ? { ...r, replaced: r.replaced ?? finish.outcome } : r;
  });
  return out;
}

/** The finish that replaces one too large to write, if any (none for a final fallback, or a park). */
function sizeFallback(f: Finish, error: PayloadTooLargeError): Finish | undefined {
  const o = f.outcome;
  if (f.sizeFallback === 'failed' || o.kind === 'waiting-children') return undefined;
  if (!f.sizeFallback) {
    const outcome = o.kind === 'completed' ? o : { ...o, stacktrace: [] };
    const lean: Finish = { job: f.job, outcome, sizeFallback: 'lean' };
    if (f.keep) lean.keep = f.keep;
    return lean;
  }
  const reason = tooLargeReason(o.kind === 'completed' ? 'result' : 'failure', error.message);
  // the record keeps what it held when claimed (under its limit), with the short reason
  return { job: f.job, outcome: { kind: 'failed', reason, stacktrace: [], remove: false }, sizeFallback: 'failed' };
}

/** Whether a finish deletes its job (removeOnComplete / removeOnFail `true`). */
function removedAtOnce(f: Finish): boolean {
  const o = f.outcome;
  return (o.kind === 'completed' || o.kind === 'failed') && o.remove;
}

/** The count bound of the finished set a finish adds a pointer to, if any (at least 1). */
function keptCount(f: Finish): number | undefined {
  const o = f.outcome;
  if ((o.kind !== 'completed' && o.kind !== 'failed') || o.remove || f.keep?.count === undefined) return undefined;
  return Math.max(1, f.keep.count);
}

async function finishBatch(store: QueueStore, batch: Finish[]): Promise<FinishResult[]> {
  const claimless = new Set<Finish>();
  const trimBatch = new TrimBatch();
  const trims = batch.map((): FinishTrim => ({ batch: trimBatch, state: { plans: 0 } }));
  let results: UnitResult[];
  try {
    results = await store.executor.run(
      batch.map((f, i) => finishUnit(store, f, true, trims[i] as FinishTrim)),
      {
        onConflict: (unit, err, op) => {
          const { finish, withClaim, round, trim } = unit;
          const handoff = handoffAfterConflict(store.layout, finish.job.record, unit.handoff, op, err, round);
          if (handoff) return finishUnit(store, finish, withClaim, trim, handoff, round + 1);
          if (op.role !== 'claim' || !(err instanceof NoNodeError)) return undefined;
          claimless.add(finish);
          return finishUnit(store, finish, false, trim, unit.handoff, round);
        },
      },
    );
  } finally {
    // plans a run that threw left (none once every unit settled)
    for (const t of trims) if (t.state.plan) settleTrim(t.state, { ok: false, error: undefined });
  }
  const out = results.map((r, i): FinishResult => {
    if (r.ok) return trims[i]?.state.later ? { ok: true, trimLater: true } : { ok: true };
    const id = (batch[i] as Finish).job.record.id;
    return { ok: false, error: (r.error as ZooKeeperError).opIndex !== undefined ? new LostJobError(id) : r.error };
  });
  await removeOwnReclaims(
    store,
    batch.filter((f, i) => claimless.has(f) && results[i]?.ok),
  );
  return out;
}

function finishUnit(
  store: QueueStore,
  f: Finish,
  withClaim: boolean,
  trim: FinishTrim,
  handoff: HandoffMode = 'next',
  round = 1,
): FinishUnit {
  return {
    finish: f,
    withClaim,
    handoff,
    round,
    trim,
    dropped: (op) => dropTrim(trim.state, op),
    settled: (result) => settleTrim(trim.state, result),
    sending: () => sendingTrim(trim.state),
    unsent: () => unsentTrim(trim.state),
    build: async () => {
      const planned = planFinish(f);
      const { job } = f;
      const id = job.record.id;
      // a job given back keeps its pointer when it is still in the job's lane
      const inPlace =
        planned.inPlace === true &&
        planned.to?.kind === 'ready' &&
        job.pointer.startsWith(`${store.layout.lane(planned.to.lane)}/`);
      const to = planned.to && !inPlace ? await store.destination(planned.to) : undefined;
      // too large: the unit fails unsent with PayloadTooLargeError, and finishJobs fails the job instead
      const record =
        planned.record &&
        encodeRecord(parkedAt(planned.record, to), f.sizeFallback === 'failed' ? FALLBACK_RECORD_BYTES : undefined);
      const ops = finishOps(
        store.layout,
        { id, token: job.token, pointer: job.pointer, record, withClaim, slot: job.slot, keepPointer: inPlace },
        to,
      );
      trim.state.createAt = to ? ops.length - 1 : undefined; // the new pointer's create is finishOps' last op
      // a failed child still pending for its parent must leave its dependencies when it is trimmed
      trim.state.createdRead =
        planned.record && to?.kind === 'failed' && mayBePendingChild(planned.record) ? planned.record : 'plain';
      let built: Built = { ops, events: [planned.event, ...(planned.also ?? [])], wakes: planned.to?.kind === 'ready' };
      // after the fence (the record at the token): a parent parking writes its dependencies,
      // a child done for good settles its standing with its parent
      if (planned.to?.kind === 'waiting-children') built = joinBuilt(built, { ops: await parkShare(store, id) });
      // a parent removed as it finishes takes its dependencies with it
      if (!planned.record && job.record.hasDeps) {
        built = joinBuilt(built, { ops: await dropDepsOps(store, id, 'reread') });
      }
      const settlement = planned.settlement;
      if (settlement && job.record.parentLink) {
        built = joinBuilt(built, await settleChildOps(store, job.record, settlement, !planned.record));
      }
      // a finished set bounded by a count is trimmed here, in the same transaction
      if (to?.kind === 'completed' || to?.kind === 'failed') {
        const keep = to.kind === f.outcome.kind ? f.keep : undefined;
        built = joinBuilt(built, await trimShare(store, trim.batch, trim.state, to.kind, keep));
      }
      // a job done for good deletes the key without ttl that names it, or hands it on (keepLastIfActive)
      return f.outcome.kind === 'retry' || f.outcome.kind === 'waiting-children'
        ? built
        : withHandoff(store, job.record, built, handoff);
    },
  };
}

/** A record parked in waiting-children names its pointer (not sequential: its path is known now). */
function parkedAt(record: JobRecord, to: Destination | undefined): JobRecord {
  return to?.kind === 'waiting-children' ? { ...record, parked: parkedPath(record.id, to) } : record;
}

/** A place to send a job, before Containers picked its bucket. */
export type Place =
  | { kind: 'ready'; lane: string }
  | { kind: 'delayed'; due: number }
  | { kind: 'completed' | 'failed' }
  | { kind: 'waiting-children' };

/** The record, new place and event of a finish (pure, but for the clock). */
export function planFinish(f: Finish): {
  record: JobRecord | undefined;
  to: Place | undefined;
  event: QueueEventRecord;
  /** Events that follow it (BullMQ's `retries-exhausted` after a final failure). */
  also?: QueueEventRecord[];
  /** What the job's parent, if any, learns: set when the job is done for good. */
  settlement?: Settlement;
  /**
   * Back to ready in its place: a job its processor gave back (a rate limit)
   * keeps its ready pointer, so it stays at the head of its lane, as on Redis.
   */
  inPlace?: boolean;
} {
  const { record } = f.job;
  const now = Date.now();
  const id = record.id;
  const base: JobRecord = { ...record, finishedOn: now };
  if (f.progress !== undefined) base.progress = f.progress as JobRecord['progress'];
  const o = f.outcome;
  const attemptsMade = record.attemptsMade + (o.kind === 'retry' && o.skipAttempt ? 0 : 1);
  if (o.kind === 'completed') {
    const event = { event: 'completed', jobId: id, returnvalue: eventValue(o.returnvalue), prev: 'active', ts: now };
    const settlement: Settlement = { kind: 'processed', value: o.returnvalue };
    if (o.remove) return { record: undefined, to: undefined, event, settlement };
    return {
      record: { ...base, state: 'completed', returnvalue: o.returnvalue, attemptsMade },
      to: { kind: 'completed' },
      event,
      settlement,
    };
  }
  if (o.kind === 'failed') {
    const event = { event: 'failed', jobId: id, failedReason: cutReason(o.reason), prev: 'active', ts: now };
    const also =
      attemptsMade >= (record.opts.attempts ?? 1)
        ? [{ event: 'retries-exhausted', jobId: id, attemptsMade, ts: now }]
        : [];
    const settlement: Settlement = { kind: 'failed', reason: cutReason(o.reason) };
    if (o.remove) return { record: undefined, to: undefined, event, also, settlement };
    const failed: JobRecord = { ...base, ...failure(record, o), state: 'failed', attemptsMade };
    delete failed.deferredFailure; // spent once the job failed (as BullMQ drops `defa`): a retry runs it
    return {
      record: failed,
      to: { kind: 'failed' },
      event,
      also,
      settlement,
    };
  }
  if (o.kind === 'waiting-children') {
    const parked: JobRecord = { ...record, state: 'waiting-children', hasDeps: true };
    if (f.progress !== undefined) parked.progress = base.progress;
    return {
      record: parked,
      to: { kind: 'waiting-children' },
      event: { event: 'waiting-children', jobId: id, prev: 'active', ts: now },
    };
  }
  const retried = { ...base, ...failure(record, o), attemptsMade, finishedOn: undefined };
  // due 0: again now; any other due (on ZooKeeper's clock) waits in delayed, promoted by the leader on that clock
  if (o.due > 0) {
    const due = Math.min(o.due, now + MAX_DELAY_MS); // a custom backoff past 100 years waits 100 years
    return {
      record: { ...retried, state: 'delayed', due },
      to: { kind: 'delayed', due },
      event: { event: 'delayed', jobId: id, delay: due, ts: now },
    };
  }
  return {
    record: { ...retried, state: 'waiting' },
    to: { kind: 'ready', lane: record.lane ?? PLAIN_LANE },
    event: { event: 'waiting', jobId: id, prev: 'active', ts: now },
    ...(o.skipAttempt ? { inPlace: true } : {}),
  };
}

/** A failed attempt's reason and stack trace history, cut to their sizes (sizes.ts). */
function failure(record: JobRecord, o: { reason: string; stacktrace: string[] }): Partial<JobRecord> {
  return {
    failedReason: cutReason(o.reason),
    stacktrace: keptStacktrace(o.stacktrace, record.stacktrace ?? [], record.opts.stackTraceLimit),
  };
}

/**
 * After a finish written without its claim node, a claim may have reappeared
 * meanwhile: the renewer re-creates a vanished claim (and its slot) while the
 * token holds. Delete it only when it is that re-claim (same worker and
 * token), with the slot it names: a claim of another attempt, after a retry,
 * is never touched.
 */
async function removeOwnReclaims(store: QueueStore, finished: Finish[]): Promise<void> {
  await Promise.all(
    finished.map(async (f) => {
      const id = f.job.record.id;
      try {
        const { data, stat } = await store.session.getData(store.layout.claim(id));
        const info = JSON.parse(data.toString()) as Partial<ClaimInfo>;
        if (info.token !== f.job.token || info.worker !== f.job.record.processedBy) return;
        const slot = typeof info.slot === 'string' ? info.slot : undefined;
        const ops = releaseOps(store.layout, { id, claimVersion: stat.version, slot });
        await store.executor.run([{ build: () => ({ ops }) }], { receipt: false });
      } catch {
        // gone (the usual case), or changed: not ours to delete
      }
    }),
  );
}

// ---- the leader: stale claims -----------------------------------------------

/** A claim judged stale: its node's version, the attempt's token, and the slot it names. */
export interface StaleClaim {
  id: string;
  version: number;
  token: number;
  slot?: string;
}

/**
 * What the leader has seen of each claim node: its version and, on the
 * leader's monotonic clock, when that version was first seen.
 */
export class LeaseObserver {
  private readonly seen = new Map<string, { czxid: number; version: number; since: number }>();

  /**
   * Reads every claim and returns those whose version has not moved for
   * their lease duration, with the version judged. A new leader starts
   * with nothing seen: it waits a full lease before revoking anything.
   */
  async stale(store: QueueStore): Promise<StaleClaim[]> {
    const { session, layout } = store;
    const ids = await store.children(layout.claimsDir);
    const now = performance.now();
    const out: StaleClaim[] = [];
    const live = new Set(ids);
    for (const id of this.seen.keys()) if (!live.has(id)) this.seen.delete(id);
    await Promise.all(
      ids.map(async (id) => {
        let info: Partial<ClaimInfo>;
        let czxid: number;
        let version: number;
        try {
          const { data, stat } = await session.getData(layout.claim(id));
          info = JSON.parse(data.toString()) as Partial<ClaimInfo>;
          ({ czxid, version } = stat);
        } catch {
          return; // gone meanwhile, or not a claim zkq wrote
        }
        const seen = this.seen.get(id);
        if (!seen || seen.czxid !== czxid || seen.version !== version) {
          // A version is dated when its read returned, never earlier: a read that was
          // retried after a reconnect may return a renewal made long after `now`.
          this.seen.set(id, { czxid, version, since: performance.now() });
          return;
        }
        const lease = typeof info.lockDuration === 'number' ? info.lockDuration : Number.POSITIVE_INFINITY;
        if (now - seen.since >= lease && typeof info.token === 'number') {
          out.push({ id, version, token: info.token, ...(typeof info.slot === 'string' ? { slot: info.slot } : {}) });
        }
      }),
    );
    return out;
  }

  /** Forgets what was seen (on losing the leadership). */
  clear(): void {
    this.seen.clear();
  }
}

/**
 * Revokes claims judged stale, each at the claim version and record token
 * judged: one stall more, state waiting, the claim deleted. `fence` ops make
 * a deposed leader's revocation fail (FencedError). Resolves with the ids revoked.
 */
export async function revokeClaims(
  store: QueueStore,
  stale: StaleClaim[],
  fence: () => ProtocolOp[],
): Promise<string[]> {
  const units = stale.map((s) => ({
    id: s.id,
    build: async () => {
      const stored = await store.getJob(s.id);
      if (!stored || stored.version !== s.token) throw new LostJobError(s.id); // claimed anew, or gone: not this attempt
      const record: JobRecord = {
        ...stored.record,
        state: 'waiting',
        stalledCounter: stored.record.stalledCounter + 1,
      };
      const ops = revokeOps(store.layout, {
        id: s.id,
        claimVersion: s.version,
        token: s.token,
        record: encodeRecord(record),
        slot: s.slot,
      });
      return { ops, events: [{ event: 'stalled', jobId: s.id, ts: Date.now() }], wakes: true };
    },
  }));
  const results = await store.executor.run(units, { fence, receipt: false });
  return stale.filter((_, i) => results[i]?.ok).map((s) => s.id);
}

/**
 * Moves a job whose record cannot be read to failed/, replacing the record
 * with a readable one that keeps the reason and the start of the original
 * text. Resolves false when the node is not a job zkq can move.
 */
export async function quarantineMalformed(store: QueueStore, candidate: Candidate, error: Error): Promise<boolean> {
  let data: Buffer;
  let version: number;
  try {
    ({
      data,
      stat: { version },
    } = await store.session.getData(store.layout.job(candidate.id)));
  } catch {
    return false;
  }
  const record = quarantineRecord(candidate.id, error.message, data.toString('utf8', 0, 2000));
  const [result] = await store.executor.run([
    {
      build: async () => ({
        ops: [
          ...moveOps(
            store.layout,
            { id: candidate.id, version, record: encodeRecord(record), from: candidate.pointer },
            (await store.destination({ kind: 'failed' })) as Destination,
          ),
          // the failed set grew: counts cached by bounded finishes must be read again
          fillOp(store.layout, 'failed', { kind: 'touch' }),
        ],
      }),
    },
  ]);
  return result?.ok === true;
}

function quarantineRecord(id: string, reason: string, raw: string): JobRecord {
  const now = Date.now();
  return {
    v: 1,
    id,
    name: '(malformed)',
    data: { raw },
    opts: {},
    progress: 0,
    attemptsMade: 0,
    attemptsStarted: 0,
    stalledCounter: 0,
    timestamp: now,
    delay: 0,
    priority: 0,
    stacktrace: [],
    failedReason: reason,
    finishedOn: now,
    state: 'failed',
  };
}

export type { OpResult };
