/**
 * The claim: a worker takes ready jobs. Reads the candidates' records, then
 * one transaction per batch checks each ready pointer (and the pause flag
 * at the version it was read unset), creates the EPHEMERAL claim and writes
 * the record; the record's new version is the attempt's fencing token.
 * A job still active without a claim (its worker died) counts a stall.
 * Called by the JobSource; claims under global limits are limited-claims.ts.
 */
import { performance } from 'node:perf_hooks';
import { BadVersionError, NodeExistsError, NoNodeError, type ZooKeeperError } from '../../zk/errors.js';
import { PayloadTooLargeError } from '../errors.js';
import type { QueueEventRecord } from '../events.js';
import type { QueueLayout } from '../layout.js';
import { decodeRecord, encodeRecord, type JobRecord } from '../record.js';
import { pauseCheckOp } from './builders.js';
import type { ClaimInfo, ProtocolContext } from './context.js';
import { FencedError, OutcomeUnknownError, type ProtocolOp } from './executor.js';

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
  /**
   * The record as the claim wrote it (JSON): a thread pool hands these bytes
   * to the job's thread; whoever holds the job drops them once handed over
   * (or at once, when it runs no threads).
   */
  bytes?: Buffer;
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
  store: ProtocolContext,
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
  store: ProtocolContext,
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
    bytes: c.record,
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
export async function claimJobs(
  store: ProtocolContext,
  candidates: Candidate[],
  o: ClaimOptions,
): Promise<ClaimResult> {
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
async function takenSince(store: ProtocolContext, left: { claim: PreparedClaim }[]): Promise<(Error | undefined)[]> {
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
async function readRecords(store: ProtocolContext, candidates: Candidate[], result: ClaimResult) {
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

/**
 * Claim: the ready pointer seen is still there (a job finished and retried
 * meanwhile has a new one), the claim node is created (EPHEMERAL: the create
 * is the mutex), and the record is written at the version read. The new
 * version is the attempt's fencing token. Under a global concurrency the
 * attempt's slot is created last (EPHEMERAL too: a slot taken meanwhile
 * fails the claim), so claim node and slot live and die together.
 */
export function claimOps(
  layout: QueueLayout,
  c: { id: string; pointer: string; version: number; record: Buffer; claim: Buffer; slot?: string | undefined },
): ProtocolOp[] {
  const ops: ProtocolOp[] = [
    { op: 'check', path: c.pointer, version: 0 },
    { op: 'create', path: layout.claim(c.id), data: c.claim, mode: 'ephemeral' },
    { op: 'setData', path: layout.job(c.id), data: c.record, version: c.version },
  ];
  if (c.slot) ops.push({ op: 'create', path: layout.slot(c.slot), mode: 'ephemeral' });
  return ops;
}
