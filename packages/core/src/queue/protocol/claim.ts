/**
 * The claim: a worker takes ready jobs without reading them first. One
 * transaction per batch (behind the pause flag, at the version it was read
 * unset) creates each job's EPHEMERAL claim node and writes its ready
 * pointer blind: the pointer's new version, in the reply, is the attempt's
 * fencing token. The records are read as the claims committed, by a read
 * sent in the same flight as the claim multi where that is safe
 * (claim-read.ts); a claim at a later pointer version than its record
 * counted follows attempts whose workers died (stalls). Called by the
 * JobSource; claims under global limits are limited-claims.ts.
 */
import { performance } from 'node:perf_hooks';
import { BadVersionError, NodeExistsError, NoNodeError, type ZooKeeperError } from '../../zk/errors.js';
import type { OpResult } from '../../zk/types.js';
import { PayloadTooLargeError } from '../errors.js';
import type { QueueEventRecord } from '../events.js';
import type { QueueLayout } from '../layout.js';
import { decodeRecord, encodeRecord, type JobRecord } from '../record.js';
import { attemptRecord, diedBefore } from './attempt-counts.js';
import { pauseCheckOp } from './builders.js';
import { BesideReads, CLAIM_READ_BATCH, type ClaimRead, readClaimed, readWithPointer } from './claim-read.js';
import { isOwnClaim, type Release, releaseClaims } from './claim-release.js';
import type { ClaimInfo, ProtocolContext } from './context.js';
import { FencedError, OutcomeUnknownError, type ProtocolOp } from './executor.js';
import { publishEvents } from './publish.js';

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
  /** The attempt's fencing token: the ready pointer's data version its claim gave it. */
  token: number;
  /** The ready pointer's czxid: with the token, names the attempt among all of the job's (`attemptKey`). */
  pointerCzxid: number;
  /** The record's data version, read after the claim (a claimed job's record is not edited by others). */
  version: number;
  pointer: string;
  /**
   * When the claim was sent, on this process's monotonic clock
   * (`performance.now()`): the leader cannot revoke the claim sooner than
   * one lease after it, so a processor started within that time starts on a
   * claim that is still ours.
   */
  claimedAt: number;
  /** Attempts before this one ended without a finish (their workers died): stalls, counted in `record`. */
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

/** A candidate ready to claim: the claim node's data and the events its claim logs. */
export interface PreparedClaim {
  candidate: Candidate;
  /** Data of the claim node (the token is not known before the claim commits). */
  claim: ClaimInfo;
  /** When the claim was decided, on this worker's clock (`processedOn`). */
  at: number;
  /** `active` (BullMQ logs it as the job is taken). */
  events: QueueEventRecord[];
}

/** The claims of `candidates`, read from nothing: a claim needs only the ready pointer's path. */
export function prepareClaims(candidates: Candidate[], o: ClaimOptions): PreparedClaim[] {
  const at = Date.now();
  return candidates.map((candidate) => ({
    candidate,
    claim: { worker: o.workerId, pointer: candidate.pointer, lockDuration: o.lockDuration, at },
    at,
    events: [{ event: 'active', jobId: candidate.id, prev: 'waiting', ts: at }],
  }));
}

/** The ops of one prepared claim, holding `limits` (the slot and window it was admitted by) when limited. */
export function preparedClaimOps(
  store: ProtocolContext,
  c: PreparedClaim,
  limits: { slot?: string | undefined; window?: string | undefined } = {},
): ProtocolOp[] {
  const claim = claimPayload({ ...c.claim, ...limits });
  return claimOps(store.layout, { id: c.candidate.id, pointer: c.candidate.pointer, claim, slot: limits.slot });
}

/** The ready pointer as a claim's reply gives it: its version (the token) and czxid (which pointer it is). */
export interface PointerStat {
  version: number;
  czxid: number;
}

/** A claim that committed: its pointer's stat from the reply (undefined: settled by a receipt). */
export interface CommittedClaim {
  claim: PreparedClaim;
  token: PointerStat | undefined;
  /** Its record and claim node as read beside its claim multi (claim-read.ts), when that read is usable. */
  beside?: Promise<ClaimRead | undefined> | undefined;
  slot?: string | undefined;
  window?: string | undefined;
}

/** The token a claim's reply gives: the ready pointer's new version, with its czxid (claimOps' second op). */
export function tokenOfReply(results: readonly OpResult[] | undefined): PointerStat | undefined {
  const r = results?.[1];
  return r?.op === 'setData' ? { version: r.stat.version, czxid: r.stat.czxid } : undefined;
}

/**
 * After the claims committed: the records read (after the claims, so what
 * they say is what the attempts own: an edit of a claimed job is refused),
 * each attempt's record brought up to date. A claim of a job whose record
 * is gone, unreadable or in a state no ready pointer goes with is released
 * again (its claim node and slot deleted) and the candidate skipped.
 */
export async function settleClaims(
  store: ProtocolContext,
  committed: CommittedClaim[],
  claimedAt: number,
  result: ClaimResult,
): Promise<void> {
  const { session, layout } = store;
  const releases: Release[] = [];
  for (let i = 0; i < committed.length; i += CLAIM_READ_BATCH) {
    const batch = committed.slice(i, i + CLAIM_READ_BATCH);
    const unknown = batch.filter((c) => c.token === undefined);
    const known = batch.filter((c) => c.token !== undefined);
    // each record with its claim node: a claim whose session was lost since it committed (its node gone
    // with it, or another worker's by now) is no longer this worker's to start. Settled by a receipt,
    // without the reply, the pointer first: it holds the token only while the claim node this claim
    // created is there (read after it). A revocation deletes that node as it moves the pointer on, and
    // the claim there by now may be another worker's, the pointer at its token.
    const [first, second] = await Promise.all([
      readWithPointer(session, layout, unknown),
      readClaimed(session, layout, known, (c, node) =>
        isOwnClaim(c.claim, node.data, node.stat.ephemeralOwner, session.sessionId),
      ),
    ]);
    const read = new Map(known.map((c, j) => [c, second[j] as ClaimRead]));
    // claims settled by a receipt whose node is this claim's still
    const own = new Set<CommittedClaim>();
    unknown.forEach((c, j) => {
      const [pointer, , claim] = first.slice(3 * j, 3 * j + 3);
      read.set(c, first.slice(3 * j + 1, 3 * j + 3) as ClaimRead);
      if (!claim?.ok || !isOwnClaim(c.claim, claim.data, claim.stat.ephemeralOwner, session.sessionId)) return;
      own.add(c);
      if (pointer?.ok) c.token = { version: pointer.stat.version, czxid: pointer.stat.czxid };
    });
    batch.forEach((c) => {
      const { candidate } = c.claim;
      const [reply, held] = read.get(c) ?? [];
      if (
        c.token !== undefined &&
        !(held?.ok && isOwnClaim(c.claim, held.data, held.stat.ephemeralOwner, session.sessionId))
      ) {
        result.skipped.push({ candidate }); // lost with its session: whoever holds it now runs it
        return;
      }
      // at the pointer's token, while the node is this claim's own (claim-release.ts)
      const release = () =>
        releases.push({ claim: c.claim, at: { pointer: candidate.pointer, token: c.token?.version ?? -1 } });
      if (c.token === undefined) {
        if (!own.has(c)) {
          // revoked meanwhile: another worker's claim may stand there now, not ours to delete
          result.skipped.push({ candidate });
          return;
        }
        releases.push({ claim: c.claim }); // its pointer gone
        result.skipped.push({ candidate, gone: true });
        return;
      }
      if (!reply?.ok) {
        release();
        // no record: a job removed since the head was listed, or a pointer left without one (not a collision)
        if (reply?.error instanceof NoNodeError) result.skipped.push({ candidate, gone: true });
        else result.skipped.push({ candidate, ...(reply ? { error: reply.error } : {}) });
        return;
      }
      let record: JobRecord;
      try {
        record = decodeRecord(reply.data, layout.job(candidate.id));
      } catch (error) {
        release();
        result.skipped.push({ candidate, error });
        return;
      }
      if (record.state !== 'waiting' && record.state !== 'active') {
        // every move of a job swaps its pointer in the transaction that writes its record, so a
        // ready pointer beside this record at this version is one left behind (an id added again)
        release();
        result.skipped.push({ candidate, stale: reply.stat.version });
        return;
      }
      const { version: token, czxid: pointerCzxid } = c.token;
      const updated = attemptRecord(record, {
        pointer: candidate.pointer,
        token,
        at: c.claim.at,
        worker: c.claim.claim.worker,
      });
      const died = diedBefore(record, candidate.pointer, token);
      const job: ClaimedJob = {
        record: updated,
        bytes: encodeRecord(updated),
        token,
        pointerCzxid,
        version: reply.stat.version,
        pointer: candidate.pointer,
        claimedAt,
        stalled: died > 0,
        czxid: reply.stat.czxid,
      };
      if (c.slot) job.slot = c.slot;
      if (c.window) job.window = c.window;
      result.claimed.push(job);
    });
  }
  // left (the reads failed): the claim goes with its session, or the leader revokes it
  if (releases.length > 0) await releaseClaims(store, releases).catch(() => undefined);
  const stalled = result.claimed.filter((j) => j.stalled);
  if (stalled.length > 0) {
    const ts = Date.now();
    // the attempts that died logged nothing: their stalls are logged now (only while someone listens)
    await publishEvents(
      store,
      stalled.map((j) => ({ event: 'stalled', jobId: j.record.id, prev: 'active', ts })),
    ).catch(() => undefined);
  }
}

/**
 * Claims as many of `candidates` as it can, in as few transactions as fit
 * (no limit applies), then reads the records of those it took. Each
 * transaction checks the pause flag's version first (`pauseVersion`): when
 * it moved on, that transaction and the ones after it claim nothing, and
 * their candidates are `left`.
 */
export async function claimJobs(
  store: ProtocolContext,
  candidates: Candidate[],
  o: ClaimOptions,
): Promise<ClaimResult> {
  const result: ClaimResult = { claimed: [], skipped: [], left: [] };
  if (o.held?.()) {
    result.left.push(...candidates);
    return result;
  }
  const claims = prepareClaims(candidates, o);
  const units = claims.map((c) => {
    const ops = preparedClaimOps(store, c);
    return { claim: c, build: () => ({ ops, events: c.events }) };
  });
  const claimedAt = performance.now();
  const beside = new BesideReads<PreparedClaim>(store.session, store.layout);
  // read once: every transaction of the run (one sent again too) checks the version the claim was decided at,
  // not the flag as known by then (unset, or read again paused)
  const pauseVersion = o.pauseVersion?.();
  const guarded = pauseVersion !== undefined;
  const fence: ProtocolOp[] = guarded ? [{ ...pauseCheckOp(store.layout, pauseVersion), role: 'fence' }] : [];
  const written = await store.executor.run(units, {
    recheck: (left) => takenSince(store, left),
    sent: beside.sent,
    // the pause check is the run's fence: one op per transaction; claims committed before it failed stand
    ...(guarded ? { fence: () => fence, settleAll: true } : {}),
  });
  let stopped: unknown;
  const committed: CommittedClaim[] = [];
  written.forEach((w, i) => {
    const c = claims[i] as PreparedClaim;
    if (w.ok) committed.push({ claim: c, token: tokenOfReply(w.results), beside: beside.of(c) });
    else if (w.error instanceof FencedError) result.left.push(c.candidate);
    else if (guarded && stoppedRun(w.error)) {
      stopped ??= w.error;
      result.left.push(c.candidate);
    } else result.skipped.push({ candidate: c.candidate, ...(isConflict(w.error) ? {} : { error: w.error }) });
  });
  // a failure that stopped the run rejects the claim, as an unguarded run does, unless claims committed first
  if (stopped !== undefined && committed.length === 0) throw stopped;
  await settleClaims(store, committed, claimedAt, result);
  return result;
}

/** An error that stopped a whole run (settled on every unit left), not the failure of one claim. */
function stoppedRun(err: unknown): boolean {
  return !isConflict(err) && !(err instanceof PayloadTooLargeError) && !(err instanceof OutcomeUnknownError);
}

/**
 * After one claim of a batch met another worker's, which of the others were
 * taken too (their claim node is there, or their pointer gone): one read of
 * them all, so that the batch is sent again without them.
 */
async function takenSince(store: ProtocolContext, left: { claim: PreparedClaim }[]): Promise<(Error | undefined)[]> {
  const { session, layout } = store;
  const replies = await session.readMulti(
    left.flatMap(({ claim }) => [
      { op: 'getData' as const, path: layout.claim(claim.candidate.id) },
      { op: 'getData' as const, path: claim.candidate.pointer },
    ]),
  );
  return left.map(({ claim }, i) => {
    const held = replies[2 * i];
    const pointer = replies[2 * i + 1];
    if (held?.ok) return new NodeExistsError(layout.claim(claim.candidate.id));
    // moved, finished or removed meanwhile: another writer went first, as a taken job
    if (!pointer?.ok && pointer?.error instanceof NoNodeError) return new BadVersionError(claim.candidate.pointer);
    return undefined;
  });
}

export { CLAIM_READ_BATCH };

/** A failure that means another writer was first (not an error to report). */
export function isConflict(err: unknown): boolean {
  return (
    (err as ZooKeeperError | undefined)?.opIndex !== undefined ||
    err instanceof NodeExistsError ||
    err instanceof BadVersionError
  );
}

/**
 * Claim: the claim node is created (EPHEMERAL: the create is the mutex),
 * and the ready pointer written blind (its data is empty): the pointer's
 * new version, in the reply, is the attempt's fencing token. A pointer gone
 * (the job moved, finished or was removed) fails the claim; a pointer's
 * name is unique per place a job took and its version never goes back, so
 * (pointer, token) names one attempt. Nothing is read first, and the record
 * is not written. Under a global concurrency the attempt's slot is created
 * last (EPHEMERAL too: a slot taken meanwhile fails the claim), so claim
 * node and slot live and die together.
 */
export function claimOps(
  layout: QueueLayout,
  c: { id: string; pointer: string; claim: Buffer; slot?: string | undefined },
): ProtocolOp[] {
  const ops: ProtocolOp[] = [
    { op: 'create', path: layout.claim(c.id), data: c.claim, mode: 'ephemeral' },
    { op: 'setData', path: c.pointer, data: EMPTY, version: -1 },
  ];
  if (c.slot) ops.push({ op: 'create', path: layout.slot(c.slot), mode: 'ephemeral' });
  return ops;
}

const EMPTY = Buffer.alloc(0);

export { releaseOps } from './claim-release.js';
