/**
 * The job protocol: claim, complete, fail, and the moves between states.
 *
 * A job is its record `jobs/<shard>/<id>` plus one pointer that says where it
 * is: `ready/<lane>/b-<n>/qn-<id>-<seq>` (waiting or active),
 * `delayed/w-<n>/<due>-<id>`, `completed/c-<id>-<seq>` or `failed/f-<id>-<seq>`.
 *
 * 1. Claim: read the record (version v), then in ONE transaction check that
 *    the ready pointer seen is still there, create `claims/<id>` (EPHEMERAL:
 *    the create is the mutex) and write the record with version v
 *    (attemptsStarted+1, state active). Without the pointer check, a worker
 *    with a stale view of the head could claim a job another worker has just
 *    finished (its claim gone, its record at a version the stale reader saw). The record's new
 *    version v+1 is this attempt's fencing token. Many jobs are claimed in one
 *    transaction; a conflict (NodeExists: someone else has it; BadVersion or
 *    NoNode: it changed or went) drops that job and the rest is retried.
 *    A record already marked active with no claim is a job whose worker died
 *    mid-attempt: the claim counts a stall, and past maxStalledCount the job
 *    is failed instead of run again (a poison job cannot loop forever).
 * 2. Renew: the owner rewrites its claim node's lease (never the record).
 * 3. Complete / fail: ONE transaction whose first op writes (or deletes) the
 *    record *at the token version*, then deletes the ready pointer and the
 *    claim, and adds the destination pointer (completed/, failed/, delayed/,
 *    or a new ready pointer for an immediate retry). If the claim was revoked
 *    (the leader bumps the record version) or the job was claimed again by
 *    another worker, the version check fails and nothing is written: the late
 *    result is dropped as lost, never recorded twice. If only the claim node
 *    is gone (our session expired but nobody claimed the job since), the
 *    version still proves ownership and the transaction runs without it.
 * 4. Crash: the claim is EPHEMERAL and the ready pointer stays until the job
 *    finishes, so a dead worker's jobs are claimable again with no help.
 */
import { BadVersionError, NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Op, OpResult } from '../zk/types.js';
import { LostJobError, PayloadTooLargeError } from './errors.js';
import { eventValue, type QueueEventRecord } from './events.js';
import { idOfPointer } from './layout.js';
import { decodeRecord, encodeRecord, type JobRecord } from './record.js';
import type { QueueStore } from './store.js';

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
}

export interface ClaimOptions {
  workerId: string;
  lockDuration: number;
}

export interface ClaimResult {
  /**
   * Jobs now owned. One whose `record.stalledCounter` passed maxStalledCount
   * (its earlier workers died mid-attempt) must be failed, not run.
   */
  claimed: ClaimedJob[];
  /** Candidates that were gone, taken or unreadable (malformed records included). */
  skipped: { candidate: Candidate; error?: unknown }[];
}

/** Ops per job in a claim transaction: check the pointer, create the claim, write the record. */
const CLAIM_OPS_PER_JOB = 3;

export function claimPayload(workerId: string, token: number, lockDuration: number, progress?: unknown): Buffer {
  return Buffer.from(JSON.stringify({ worker: workerId, token, leaseUntil: Date.now() + lockDuration, progress }));
}

/** Claims as many of `candidates` as it can, in one transaction when nothing conflicts. */
export async function claimJobs(store: QueueStore, candidates: Candidate[], o: ClaimOptions): Promise<ClaimResult> {
  const { session, layout } = store;
  const result: ClaimResult = { claimed: [], skipped: [] };
  const reads = await Promise.all(
    candidates.map(async (candidate) => {
      try {
        const { data, stat } = await session.getData(layout.job(candidate.id));
        return { candidate, record: decodeRecord(data, layout.job(candidate.id)), version: stat.version };
      } catch (error) {
        result.skipped.push({ candidate, error: error instanceof NoNodeError ? undefined : error });
        return undefined;
      }
    }),
  );
  // Only a waiting (or dead worker's active) job can be claimed; a stale view
  // of the head may still list one that has just finished or moved.
  const readable = reads.filter((r) => r !== undefined);
  let pending = readable.filter((r) => r.record.state === 'waiting' || r.record.state === 'active');
  for (const r of readable) if (!pending.includes(r)) result.skipped.push({ candidate: r.candidate });
  const now = Date.now();
  for (const r of pending) {
    if (r.record.state === 'active') r.record.stalledCounter++; // its last worker died mid-attempt
  }

  while (pending.length > 0) {
    const ops: Op[] = [];
    const next = pending.map((r) => ({
      ...r,
      updated: {
        ...r.record,
        state: 'active' as const,
        attemptsStarted: r.record.attemptsStarted + 1,
        processedOn: now,
        processedBy: o.workerId,
      },
    }));
    for (const r of next) {
      // The pointer must still be the one we saw: a job finished and retried
      // meanwhile has a new pointer, and its old one is gone (pointers are never written).
      ops.push({ op: 'check', path: r.candidate.pointer, version: 0 });
      ops.push({
        op: 'create',
        path: layout.claim(r.candidate.id),
        data: claimPayload(o.workerId, r.version + 1, o.lockDuration),
        mode: 'ephemeral',
      });
      ops.push({ op: 'setData', path: layout.job(r.candidate.id), data: encodeRecord(r.updated), version: r.version });
    }
    const eventOp = store.events.op(
      next.map((r) => ({ event: 'active', jobId: r.candidate.id, prev: 'waiting', ts: now })),
    );
    try {
      const results = await session.multi(eventOp ? [...ops, eventOp] : ops);
      store.events.afterWrite(results.map((r) => (r as { path?: string }).path));
      for (const r of next) {
        result.claimed.push({ record: r.updated, token: r.version + 1, pointer: r.candidate.pointer });
      }
      return result;
    } catch (err) {
      const index = conflictIndex(err);
      if (index === undefined || index >= ops.length) throw err;
      const loser = pending[Math.floor(index / CLAIM_OPS_PER_JOB)];
      if (loser) result.skipped.push({ candidate: loser.candidate });
      pending = pending.filter((r) => r !== loser);
    }
  }
  return result;
}

/** Index of the op that lost a race (someone else changed the node), else undefined. */
function conflictIndex(err: unknown): number | undefined {
  const racy = err instanceof NodeExistsError || err instanceof BadVersionError || err instanceof NoNodeError;
  return racy ? (err as NodeExistsError).opIndex : undefined;
}

/** Where a finished attempt sends its job. */
export type Outcome =
  | { kind: 'completed'; returnvalue: unknown; remove: boolean }
  | { kind: 'failed'; reason: string; stacktrace: string[]; remove: boolean }
  | { kind: 'retry'; reason: string; stacktrace: string[]; due: number };

/** One attempt's result, ready to be written. */
export interface Finish {
  job: ClaimedJob;
  outcome: Outcome;
  /** Log lines to store with the record. */
  logs?: string[];
  progress?: unknown;
}

/** The ops that record `finish`; the first op always checks the token. */
export async function finishOps(store: QueueStore, f: Finish, withClaim = true): Promise<Op[]> {
  const { layout } = store;
  const { record, token, pointer } = f.job;
  const now = Date.now();
  const id = record.id;
  const base: JobRecord = { ...record, finishedOn: now };
  if (f.logs?.length) base.logs = [...(record.logs ?? []), ...f.logs].slice(-(record.opts.keepLogs ?? 1000));
  if (f.progress !== undefined) base.progress = f.progress as JobRecord['progress'];
  const ops: Op[] = [];
  const o = f.outcome;
  let updated: JobRecord | undefined;
  let destination: Op | undefined;
  if (o.kind === 'completed') {
    updated = o.remove
      ? undefined
      : { ...base, state: 'completed', returnvalue: o.returnvalue, attemptsMade: record.attemptsMade + 1 };
    if (updated) destination = { op: 'create', path: layout.completedPointerPrefix(id), mode: 'persistent_sequential' };
  } else if (o.kind === 'failed') {
    updated = o.remove
      ? undefined
      : { ...base, ...failure(record, o), state: 'failed', attemptsMade: record.attemptsMade + 1 };
    if (updated) destination = { op: 'create', path: layout.failedPointerPrefix(id), mode: 'persistent_sequential' };
  } else {
    const common = { ...base, ...failure(record, o), attemptsMade: record.attemptsMade + 1, finishedOn: undefined };
    if (o.due > now) {
      await store.ensureDir(layout.delayWindow(o.due));
      updated = { ...common, state: 'delayed', due: o.due };
      destination = { op: 'create', path: layout.delayed(o.due, id) };
    } else {
      const ready = await store.readyPointerOp(id, record.lane ?? 'p-0000000000');
      updated = { ...common, state: 'waiting' };
      destination = ready.op;
    }
  }
  if (updated) ops.push({ op: 'setData', path: layout.job(id), data: encodeRecord(updated), version: token });
  else ops.push({ op: 'delete', path: layout.job(id), version: token });
  ops.push({ op: 'delete', path: pointer });
  if (withClaim) ops.push({ op: 'delete', path: layout.claim(id) });
  if (destination) ops.push(destination);
  return ops;
}

function failure(record: JobRecord, o: { reason: string; stacktrace: string[] }): Partial<JobRecord> {
  const limit = record.opts.stackTraceLimit ?? 10;
  return { failedReason: o.reason, stacktrace: [...o.stacktrace, ...record.stacktrace].slice(0, Math.max(limit, 1)) };
}

/** The event a finish publishes (BullMQ's names: a retry is `delayed` or `waiting` again). */
function finishEvent(f: Finish): QueueEventRecord {
  const o = f.outcome;
  const jobId = f.job.record.id;
  const ts = Date.now();
  if (o.kind === 'completed')
    return { event: 'completed', jobId, returnvalue: eventValue(o.returnvalue), prev: 'active', ts };
  if (o.kind === 'failed') return { event: 'failed', jobId, failedReason: o.reason, prev: 'active', ts };
  return o.due > ts ? { event: 'delayed', jobId, delay: o.due, ts } : { event: 'waiting', jobId, prev: 'failed', ts };
}

/** What became of each finish in a batch. */
export type FinishResult = { ok: true } | { ok: false; error: unknown };

/**
 * Writes many finishes, in one transaction when nothing conflicts. A finish
 * whose token no longer matches is reported as LostJobError; one whose claim
 * node alone is gone is written without it.
 */
export async function finishJobs(store: QueueStore, batch: Finish[]): Promise<FinishResult[]> {
  const results: FinishResult[] = batch.map(() => ({ ok: true }));
  let pending = batch.map((f, i) => ({ f, i, withClaim: true }));
  while (pending.length > 0) {
    const built: { ops: Op[]; entry: (typeof pending)[number] }[] = [];
    for (const entry of pending) {
      try {
        built.push({ ops: await finishOps(store, entry.f, entry.withClaim), entry });
      } catch (error) {
        if (!(error instanceof PayloadTooLargeError) || entry.f.outcome.kind !== 'completed') throw error;
        entry.f = { ...entry.f, outcome: { kind: 'failed', reason: error.message, stacktrace: [], remove: false } };
        built.push({ ops: await finishOps(store, entry.f, entry.withClaim), entry });
      }
    }
    const ops = built.flatMap((b) => b.ops);
    const eventOp = store.events.op(built.map((b) => finishEvent(b.entry.f)));
    try {
      const written = await store.session.multi(eventOp ? [...ops, eventOp] : ops);
      store.events.afterWrite(written.map((r) => (r as { path?: string }).path));
      await removeStaleClaims(
        store,
        pending.filter((p) => !p.withClaim).map((p) => p.f.job.record.id),
      );
      return results;
    } catch (err) {
      const index = (err as { opIndex?: number }).opIndex;
      if (
        index === undefined ||
        !(err instanceof NoNodeError || err instanceof BadVersionError || err instanceof NodeExistsError)
      ) {
        throw err;
      }
      let at = 0;
      if (index >= ops.length) throw err;
      const culprit = built.find((b) => {
        at += b.ops.length;
        return index < at;
      });
      if (!culprit) throw err;
      const opInJob = index - (at - culprit.ops.length);
      const claimGone = err instanceof NoNodeError && culprit.entry.withClaim && opInJob === 2;
      if (claimGone) {
        culprit.entry.withClaim = false;
      } else {
        results[culprit.entry.i] = { ok: false, error: new LostJobError(culprit.entry.f.job.record.id) };
        pending = pending.filter((p) => p !== culprit.entry);
      }
    }
  }
  return results;
}

/**
 * Revokes the claim of job `id` (the leader's recovery of a hung worker): in
 * one transaction, deletes the claim and rewrites the record with one more
 * stall, which moves the version on so that the hung worker's late result
 * fails its fencing check. The ready pointer stays, so the job is claimed
 * again; a job past maxStalledCount is failed by that next claim. `fence`
 * ops (the leader's election check) make a deposed leader's revocation fail;
 * `token` (from the claim judged stale) limits it to that attempt.
 * Resolves false when there was nothing to revoke.
 */
export async function revokeClaim(store: QueueStore, id: string, fence: Op[] = [], token?: number): Promise<boolean> {
  const { session, layout } = store;
  let data: Buffer;
  let version: number;
  try {
    ({
      data,
      stat: { version },
    } = await session.getData(layout.job(id)));
  } catch (err) {
    if (err instanceof NoNodeError) return false;
    throw err;
  }
  // With `token`, revoke only that attempt: if the job was claimed anew since,
  // its record has moved past the token and nothing is revoked.
  if (token !== undefined && token !== version) return false;
  const record = decodeRecord(data, layout.job(id));
  const updated: JobRecord = { ...record, state: 'waiting', stalledCounter: record.stalledCounter + 1 };
  const eventOp = store.events.op([{ event: 'stalled', jobId: id, ts: Date.now() }]);
  try {
    await session.multi([
      ...fence,
      { op: 'delete', path: layout.claim(id) },
      { op: 'setData', path: layout.job(id), data: encodeRecord(updated), version },
      ...(eventOp ? [eventOp] : []),
    ]);
    return true;
  } catch (err) {
    if (err instanceof NoNodeError || err instanceof BadVersionError) {
      if (err.opIndex !== undefined && err.opIndex < fence.length) throw err; // fencing failed: not leader
      return false;
    }
    throw err;
  }
}

/**
 * Moves a job whose record cannot be read to failed/, replacing the record
 * with a readable one that keeps the reason and the start of the original
 * text. Resolves false when the node is not a job zkq can move (a foreign
 * pointer), which callers then leave alone.
 */
export async function quarantineMalformed(store: QueueStore, candidate: Candidate, error: Error): Promise<boolean> {
  const { session, layout } = store;
  try {
    const { data, stat } = await session.getData(layout.job(candidate.id));
    const record = newQuarantineRecord(candidate.id, error.message, data.toString('utf8', 0, 2000));
    await session.multi([
      { op: 'setData', path: layout.job(candidate.id), data: encodeRecord(record), version: stat.version },
      { op: 'delete', path: candidate.pointer },
      { op: 'create', path: layout.failedPointerPrefix(candidate.id), mode: 'persistent_sequential' },
    ]);
    return true;
  } catch {
    return false;
  }
}

function newQuarantineRecord(id: string, reason: string, raw: string): JobRecord {
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

/**
 * After a finish written without its claim node (the claim had vanished with
 * an expired session), a claim that reappeared meanwhile can only be this
 * worker's own re-claim: the finish passed its token check, so nobody else
 * claimed the job. Remove it so the job does not look active.
 */
async function removeStaleClaims(store: QueueStore, ids: string[]): Promise<void> {
  await Promise.all(
    ids.map((id) =>
      store.session.delete(store.layout.claim(id)).catch((err) => {
        if (!(err instanceof NoNodeError)) throw err;
      }),
    ),
  );
}

export type { OpResult };
export { idOfPointer };
