/**
 * Edits of one job: its delay, priority, data and logs.
 *
 * Log lines live apart from the record (the protocol's logs.ts): `addLog`
 * and `clearLogs` write the job's log node whatever the job is doing.
 * A job's record version is the fencing token of its running attempt, so a
 * write to the record of an active job would revoke that attempt. Hence, for
 * the other edits:
 * - a job this backend runs (a BullMQ Worker's job editing itself): the edit
 *   goes into the attempt's record in memory and is written with the
 *   attempt's fenced finish (completed, failed or retried); the Job object
 *   already shows it;
 * - a job running elsewhere: refused with JobStateError (code ZKQ_JOB_STATE);
 * - any other job: its record is rewritten (and its pointer moved, for a
 *   new delay or priority) at the version read, in one transaction, planned
 *   again when the job changed meanwhile (a claim moves the version on): the
 *   protocol's editJob.
 */
import { JobStateError, MAX_DELAY_MS, MAX_PRIORITY } from '@zkq/core';
import {
  clearJobLogs,
  editJob,
  encodeRecord,
  findPointer,
  type JobRecord,
  type LogOwner,
  laneOf,
  type Plan,
  type QueueStore,
  readJobLogs,
  rewrite,
  type StoredJob,
  toDelayed,
  toReady,
  writeLogs,
} from '@zkq/core/internal';
import { ErrorCode } from 'bullmq';
import type { AnyJob } from './attempts.js';
import type { BackendContext, Held } from './context.js';
import { finishedError } from './json.js';

/** Where a job is, as an edit sees it. */
type Found =
  | { kind: 'missing' }
  | { kind: 'held'; held: Held }
  | { kind: 'running' }
  | { kind: 'idle'; store: QueueStore; stored: StoredJob };

/** The record is read before the claim is looked at: a claim taken after the read moves the version on. */
async function find(ctx: BackendContext, id: string): Promise<Found> {
  const held = ctx.held.get(id);
  if (held) return { kind: 'held', held };
  const store = await ctx.store();
  const stored = await store.getJob(id);
  if (!stored) return { kind: 'missing' };
  if (await store.getClaim(id)) return { kind: 'running' };
  return { kind: 'idle', store, stored };
}

/**
 * Writes an edit planned from a fresh look at the job, planned again while
 * the job changes under it. Every edit goes with a receipt: planned again
 * after a lost reply, a new look found the edit written and the job perhaps
 * claimed or removed since, and refused an edit that was made.
 */
async function edit<T>(ctx: BackendContext, plan: () => Promise<Plan<T>>, receipt: boolean): Promise<T> {
  return editJob(await ctx.store(), plan, { receipt });
}

function runningElsewhere(id: string, command: string): JobStateError {
  return new JobStateError(id, `${command}: it is running in another process, and writing its record would revoke it`);
}

/** Changes the held attempt's record in memory; `change` may throw (nothing changed then). */
function editHeld(held: Held, change: (r: JobRecord) => JobRecord): JobRecord {
  const next = change(held.job.record);
  encodeRecord(next); // too large: refused now, not at the finish
  held.job.record = next;
  return next;
}

/** Job.changeDelay: a delayed job is due `delay` ms from now. */
export async function changeDelay(ctx: BackendContext, jobId: string, delay: number): Promise<void> {
  const notDelayed = () => finishedError(ErrorCode.JobNotInState, jobId, 'changeDelay', 'delayed');
  await edit(
    ctx,
    async () => {
      const found = await find(ctx, jobId);
      if (found.kind === 'missing') throw finishedError(ErrorCode.JobNotExist, jobId, 'changeDelay');
      if (found.kind !== 'idle' || found.stored.record.state !== 'delayed') throw notDelayed();
      const { store, stored } = found;
      const now = Date.now();
      const due = store.clock.fromLocal(now + Math.min(Math.max(0, delay), MAX_DELAY_MS));
      const record = { ...stored.record, delay, due };
      const event = { event: 'delayed', jobId, delay: due, ts: now };
      return {
        answer: undefined,
        unit: toDelayed(store, stored, record, await findPointer(store, stored.record), [event]),
      };
    },
    true,
  );
}

/**
 * Job.changePriority: a waiting job moves to the lane of its new priority
 * (lifo: the lane served first); a delayed or finished one keeps it for
 * when it waits again.
 */
export async function changePriority(ctx: BackendContext, jobId: string, priority = 0, lifo = false): Promise<void> {
  if (!Number.isInteger(priority) || priority < 0 || priority > MAX_PRIORITY) {
    throw new RangeError(`Priority should be between 0 and ${MAX_PRIORITY}`);
  }
  const lane = laneOf(priority, lifo);
  const change = (r: JobRecord): JobRecord => ({ ...r, priority, lane });
  await edit(
    ctx,
    async () => {
      const found = await find(ctx, jobId);
      if (found.kind === 'missing') throw finishedError(ErrorCode.JobNotExist, jobId, 'changePriority');
      if (found.kind === 'running') throw runningElsewhere(jobId, 'changePriority');
      if (found.kind === 'held') return { answer: void editHeld(found.held, change) };
      const { store, stored } = found;
      const r = stored.record;
      if (r.state !== 'waiting' && r.state !== 'active')
        return { answer: undefined, unit: rewrite(store, stored, change(r)) };
      // waiting (or active in a record whose worker died: waiting to be claimed again)
      return { answer: undefined, unit: toReady(store, stored, change(r), await findPointer(store, r), []) };
    },
    true,
  );
}

/** Job.updateData: the data is replaced (as JSON, as BullMQ stores it). */
export async function updateData(ctx: BackendContext, job: AnyJob, data: unknown): Promise<void> {
  const id = job.id as string;
  const value = data === undefined ? {} : (JSON.parse(JSON.stringify(data)) as unknown);
  await rewriteRecord(ctx, id, 'updateData', (r) => ({ ...r, data: value }), { missing: 'throw', receipt: true });
}

/** The owner of a job's log node: the attempt this backend holds, else the stored job; undefined when missing. */
async function logOwner(ctx: BackendContext, jobId: string): Promise<{ owner: LogOwner; legacy: number } | undefined> {
  const held = ctx.held.get(jobId);
  if (held) {
    const { record, czxid } = held.job;
    return { owner: { id: jobId, czxid, keepLogs: record.opts.keepLogs }, legacy: record.logs?.length ?? 0 };
  }
  const read = await readJobLogs(await ctx.store(), jobId);
  if (!read) return undefined;
  const { record, czxid } = read;
  return { owner: { id: jobId, czxid, keepLogs: record.opts.keepLogs }, legacy: record.logs?.length ?? 0 };
}

/**
 * Job.log: appends a line to the job's log node, apart from its record (so a
 * running job's own lines, and those of a job running elsewhere, are written
 * at once), keeping the last `keepLogs` (else the job's keepLogs, else 1000)
 * within the log's byte bound; resolves with the count kept.
 */
export async function addLog(ctx: BackendContext, jobId: string, row: string, keepLogs?: number): Promise<number> {
  const found = await logOwner(ctx, jobId);
  if (!found) throw finishedError(ErrorCode.JobNotExist, jobId, 'addLog');
  const owner = keepLogs && keepLogs > 0 ? { ...found.owner, keepLogs } : found.owner;
  const [count] = await writeLogs(await ctx.store(), [{ owner, lines: [String(row)] }]);
  const held = ctx.held.get(jobId);
  if (held && held.job.czxid === owner.czxid) held.logged = true;
  return (count ?? 0) + found.legacy;
}

/**
 * Job.clearLogs: keeps the last `keepLogs` lines, or none. A missing job has
 * no logs to clear. Lines kept in the record by an older version (before
 * logs lived apart) are cleared by rewriting it, which a job running
 * elsewhere refuses.
 */
export async function clearLogs(ctx: BackendContext, jobId: string, keepLogs?: number): Promise<void> {
  const found = await logOwner(ctx, jobId);
  if (!found) return;
  const keep = keepLogs && keepLogs > 0 ? keepLogs : 0;
  await clearJobLogs(await ctx.store(), found.owner, keep);
  if (found.legacy === 0) return;
  await rewriteRecord(
    ctx,
    jobId,
    'clearLogs',
    (r) => {
      const logs = r.logs ?? [];
      const kept = keep > 0 ? logs.slice(-keep) : [];
      return kept.length === logs.length ? r : { ...r, logs: kept };
    },
    { missing: 'ignore', receipt: true },
  );
}

/** Rewrites fields of a record where it is; `change` returning the record itself writes nothing. */
export async function rewriteRecord(
  ctx: BackendContext,
  id: string,
  command: string,
  change: (r: JobRecord) => JobRecord,
  o: { missing: 'throw' | 'ignore'; receipt: boolean },
): Promise<void> {
  await edit(
    ctx,
    async () => {
      const found = await find(ctx, id);
      if (found.kind === 'missing') {
        if (o.missing === 'throw') throw finishedError(ErrorCode.JobNotExist, id, command);
        return { answer: undefined };
      }
      if (found.kind === 'running') throw runningElsewhere(id, command);
      if (found.kind === 'held') return { answer: void editHeld(found.held, change) };
      const next = change(found.stored.record);
      if (next === found.stored.record) return { answer: undefined };
      return { answer: undefined, unit: rewrite(found.store, found.stored, next) };
    },
    o.receipt,
  );
}
