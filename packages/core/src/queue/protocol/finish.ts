/**
 * The finish: an attempt's outcome written at its token, in one transaction
 * with everything it entails: pointer and claim swapped for the new place,
 * a parent's standing settled (flow-settle.ts), the finished set trimmed to
 * its count (trims.ts), a deduplication key dropped or handed on (dedup.ts).
 * A finish too large to store is written again smaller; its log lines go
 * first, to the job's log node. Called by the Worker's Finisher.
 */
import { NodeExistsError, NoNodeError, type ZooKeeperError } from '../../zk/errors.js';
import { type HandoffMode, handoffAfterConflict, withHandoff } from '../dedup.js';
import { LostJobError, PayloadTooLargeError } from '../errors.js';
import type { QueueLayout } from '../layout.js';
import { encodeRecord, type JobRecord, MAX_RECORD_BYTES } from '../record.js';
import { tooLargeReason } from '../sizes.js';
import { type Destination, parkedPath, pointerOp, unclaimedOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { Built, ProtocolOp, TxUnit, UnitResult } from './executor.js';
import { type Finish, type Outcome, planFinish } from './finish-plan.js';
import { mayBePendingChild } from './flow-detach.js';
import { joinBuilt } from './flow-parent.js';
import { parkShare, settleChildOps } from './flow-settle.js';
import { dropDepsOps } from './flow-sweep.js';
import { dropLogsOfGoneJobs, writeLogs } from './logs.js';
import { dropTrim, sendingTrim, settleTrim, TrimBatch, type TrimState, trimShare, unsentTrim } from './trims.js';

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
  /** Times it switched between a finish with its claim and one without (each: the claim vanished, or came back). */
  switches: number;
};

/** Switches between a finish with its claim and one without one finish may make in one run (as a lease's). */
const MAX_CLAIM_SWITCHES = 4;

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
export async function finishJobs(store: ProtocolContext, batch: Finish[]): Promise<FinishResult[]> {
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
async function writeAttemptLogs(store: ProtocolContext, batch: Finish[]): Promise<void> {
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
async function failOversized(store: ProtocolContext, batch: Finish[], out: FinishResult[]): Promise<FinishResult[]> {
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

async function finishBatch(store: ProtocolContext, batch: Finish[]): Promise<FinishResult[]> {
  const trimBatch = new TrimBatch();
  const trims = batch.map((): FinishTrim => ({ batch: trimBatch, state: { plans: 0 } }));
  let results: UnitResult[];
  try {
    results = await store.executor.run(
      batch.map((f, i) => finishUnit(store, f, true, trims[i] as FinishTrim)),
      {
        onConflict: (unit, err, op) => {
          const { finish, withClaim, round, trim, switches } = unit;
          const handoff = handoffAfterConflict(store.layout, finish.job.record, unit.handoff, op, err, round);
          if (handoff) return finishUnit(store, finish, withClaim, trim, handoff, round + 1, switches);
          if (op.role !== 'claim' || switches >= MAX_CLAIM_SWITCHES) return undefined;
          // the claim vanished with an expired session: written without it; the renewer's re-claim of it
          // since: written with it again (finishOps)
          const vanished = withClaim && err instanceof NoNodeError;
          const reclaimed = !withClaim && err instanceof NodeExistsError;
          if (!vanished && !reclaimed) return undefined;
          return finishUnit(store, finish, !withClaim, trim, unit.handoff, round, switches + 1);
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
  return out;
}

function finishUnit(
  store: ProtocolContext,
  f: Finish,
  withClaim: boolean,
  trim: FinishTrim,
  handoff: HandoffMode = 'next',
  round = 1,
  switches = 0,
): FinishUnit {
  return {
    finish: f,
    withClaim,
    handoff,
    round,
    trim,
    switches,
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
      // kept in place, the pointer is written (finishOps): the record counts that write, so its next claim is no stall
      const kept =
        inPlace && planned.record
          ? { ...planned.record, counted: { pointer: job.pointer, token: job.token + 1 } }
          : planned.record;
      // too large: the unit fails unsent with PayloadTooLargeError, and finishJobs fails the job instead
      const record =
        kept && encodeRecord(parkedAt(kept, to), f.sizeFallback === 'failed' ? FALLBACK_RECORD_BYTES : undefined);
      const ops = finishOps(
        store.layout,
        {
          id,
          token: job.token,
          version: job.version,
          pointer: job.pointer,
          record,
          withClaim,
          slot: job.slot,
          keepPointer: inPlace,
        },
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

/**
 * Finish (complete, fail, retry): the ready pointer deleted at the token
 * (kept, and written at it, by a job given back in place: the attempt's
 * lease ends with the finish either way, so a renewal of it handed over
 * after the finish fails rather than re-creating its claim), the record
 * written (or deleted) at the version the attempt read, the claim deleted
 * (with the attempt's slot, which lives as long as the claim node naming
 * it), the new pointer created. `withClaim: false` when the claim vanished
 * with an expired session: the token alone proves that nobody claimed the
 * job since, and the slot vanished with the claim (another attempt may hold
 * that name by now). It is written only while no claim node is there (one
 * created and deleted): the renewer re-creates a vanished claim, with its
 * slot, while the token holds, and nothing else would remove that re-claim
 * once the finish moved the job on (the leader revokes only at the pointer);
 * met, the finish is written with its claim again.
 */
export function finishOps(
  layout: QueueLayout,
  f: {
    id: string;
    token: number;
    /** The record's version, as the attempt read it after its claim. */
    version: number;
    pointer: string;
    record: Buffer | undefined;
    withClaim: boolean;
    slot?: string | undefined;
    /** The job stays where its pointer is (a job given back to its lane's head). */
    keepPointer?: boolean;
  },
  to: Destination | undefined,
): ProtocolOp[] {
  const ops: ProtocolOp[] = [
    f.keepPointer
      ? { op: 'setData', path: f.pointer, data: EMPTY, version: f.token }
      : { op: 'delete', path: f.pointer, version: f.token },
    f.record
      ? { op: 'setData', path: layout.job(f.id), data: f.record, version: f.version }
      : { op: 'delete', path: layout.job(f.id), version: f.version },
  ];
  if (f.withClaim) {
    ops.push({ op: 'delete', path: layout.claim(f.id), role: 'claim' });
    if (f.slot) ops.push({ op: 'delete', path: layout.slot(f.slot) });
  } else {
    const [create, remove] = unclaimedOps(layout, f.id) as [ProtocolOp, ProtocolOp];
    ops.push({ ...create, role: 'claim' }, remove);
  }
  if (to) ops.push(pointerOp(layout, f.id, to));
  return ops;
}

const EMPTY = Buffer.alloc(0);
