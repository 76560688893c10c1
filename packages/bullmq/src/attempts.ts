/**
 * Adding jobs and running them, as BullMQ's Worker drives it, over the zkq
 * protocol: a claim is the protocol's claim (its fencing token is the record
 * version), and BullMQ's lock token names it inside this backend. Every
 * finish is the protocol's fenced finish, so a job revoked or claimed
 * elsewhere cannot complete here.
 */
import {
  type ClaimedJob,
  DEFAULT_KEEP_COMPLETED,
  DEFAULT_KEEP_FAILED,
  type EnqueueEntry,
  type Finish,
  finishJobs,
  type JobRecord,
  type JobsOptions,
  keepPolicy,
  type Lease,
  LostJobError,
  laneOf,
  leaseOf,
  MAX_DELAY_MS,
  MAX_PRIORITY,
  newRecord,
  type Outcome,
  renewLeases,
  reportProgress,
  type Trimmer,
  validateCustomJobId,
} from '@zkq/core';
import { ErrorCode, type JobJson, type MinimalJob, type ParentKeyOpts } from 'bullmq';
import type { BackendContext, Held } from './context.js';
import { rewriteRecord } from './edits.js';
import { NotSupportedError } from './errors.js';
import { finishedError, toJobJson } from './json.js';

/** BullMQ's `[jobData, id, rateLimitDelay, delayUntil]`, empty when nothing was claimed. */
export type NextJob = [JobJson | null, string, number, number];
const NOTHING: NextJob = [null, '', 0, 0];
/** Tries of a claim round whose candidates were all taken by other workers first. */
const CLAIM_TRIES = 3;

// ---- adding -----------------------------------------------------------------

export interface AddEntry {
  job: JobJson;
  jobId: string;
  parentKeyOpts?: ParentKeyOpts;
}

/** Adds jobs; a custom id that exists answers with that id (BullMQ's de-duplication by id). */
export async function addJobs(ctx: BackendContext, entries: AddEntry[]): Promise<string[]> {
  const store = await ctx.store();
  const needIds = entries.filter((e) => !e.jobId).length;
  const ids = needIds ? await store.nextIds(needIds) : [];
  const prepared: EnqueueEntry[] = entries.map((e) => toEntry(e, e.jobId || (ids.shift() as string)));
  await store.enqueue(prepared);
  return prepared.map((p) => p.record.id);
}

function toEntry({ job, jobId, parentKeyOpts }: AddEntry, id: string): EnqueueEntry {
  const opts = job.opts ?? {};
  if (parentKeyOpts?.parentKey || opts.parent) throw new NotSupportedError('flows (parent and children jobs)');
  if ((opts as { repeat?: unknown }).repeat) throw new NotSupportedError('repeatable jobs (job schedulers)');
  if (opts.deduplication || (opts as { debounce?: unknown }).debounce) {
    throw new NotSupportedError('deduplication keys (use a custom jobId)');
  }
  if (jobId) validateCustomJobId(jobId);
  const priority = opts.priority ?? 0;
  if (!Number.isInteger(priority) || priority < 0 || priority > MAX_PRIORITY) {
    throw new RangeError(`Priority should be between 0 and ${MAX_PRIORITY}`);
  }
  // BullMQ: a priority wins over lifo (lifo orders only jobs without one)
  const lifo = (opts.lifo ?? false) && priority === 0;
  const delay = Math.min(Math.max(opts.delay ?? 0, 0), MAX_DELAY_MS);
  const now = Date.now();
  const timestamp = job.timestamp || now;
  const state = delay > 0 ? 'delayed' : 'waiting';
  const record = newRecord(id, job.name, JSON.parse(job.data || '{}'), opts as JobsOptions, state, now);
  record.timestamp = timestamp;
  if (delay > 0) record.due = timestamp + delay;
  return { record, lane: laneOf(priority, lifo), custom: Boolean(jobId) };
}

// ---- claiming ---------------------------------------------------------------

/**
 * Claims the next job for `token`. Calls that overlap (a Worker at
 * concurrency N) are served by one claim transaction between them.
 */
export class Claimer {
  private waiting: { token: string; resolve: (next: NextJob) => void; reject: (err: unknown) => void }[] = [];
  private running = false;

  constructor(private readonly ctx: BackendContext) {}

  next(token: string): Promise<NextJob> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ token, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0);
        try {
          const { jobs, ttl } = await this.claim(batch.length);
          batch.forEach((w, i) => {
            const job = jobs[i];
            if (!job) {
              // rate limited: BullMQ's Worker waits the ttl before it asks again
              w.resolve(ttl > 0 ? [null, '', ttl, 0] : NOTHING);
              return;
            }
            this.ctx.held.set(job.record.id, { job, lock: w.token });
            w.resolve([toJobJson(job.record), job.record.id, 0, 0]);
          });
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async claim(max: number): Promise<{ jobs: ClaimedJob[]; ttl: number }> {
    if (await this.ctx.paused()) return { jobs: [], ttl: 0 };
    const source = await this.ctx.source();
    const out: ClaimedJob[] = [];
    let ttl = 0;
    for (let tries = 0; out.length < max && tries < CLAIM_TRIES; tries++) {
      const taken = await source.take(max - out.length);
      if (taken === 'idle') break;
      if (!Array.isArray(taken)) {
        ttl = taken.ttl; // a global limit holds claims back (0: the global concurrency)
        break;
      }
      for (const job of taken) {
        // the previous attempt's worker died: BullMQ's Worker reports it as stalled
        if (job.stalled) this.ctx.noteStalled(job.record.id);
        if (job.record.stalledCounter > this.ctx.maxStalledCount) await this.failStalled(job);
        else out.push(job);
      }
    }
    return { jobs: out, ttl };
  }

  /** A job whose workers kept dying fails instead of running again (BullMQ's maxStalledCount). */
  private async failStalled(job: ClaimedJob): Promise<void> {
    const store = await this.ctx.store();
    const remove = keepPolicy(job.record.opts.removeOnFail ?? this.ctx.opts.removeOnFail, DEFAULT_KEEP_FAILED);
    await finishJobs(store, [
      {
        job,
        outcome: {
          kind: 'failed',
          reason: 'job stalled more than allowable limit',
          stacktrace: [],
          remove: remove === 'remove',
        },
      },
    ]);
  }
}

// ---- finishing --------------------------------------------------------------

/** The attempt `token` holds on `jobId`, or BullMQ's error for a missing or foreign lock. */
export function heldBy(ctx: BackendContext, jobId: string, token: string | undefined, command: string): Held {
  const held = ctx.held.get(jobId);
  if (!held) throw finishedError(ErrorCode.JobLockNotExist, jobId, command);
  if (token !== undefined && token !== '0' && held.lock !== token) {
    throw finishedError(ErrorCode.JobLockMismatch, jobId, command, 'active');
  }
  return held;
}

/** Writes an attempt's outcome; the attempt is no longer held either way. */
export async function finish(
  ctx: BackendContext,
  held: Held,
  outcome: Outcome,
  command: string,
  progress?: unknown,
): Promise<number> {
  const id = held.job.record.id;
  const f: Finish = { job: held.job, outcome };
  if (progress !== undefined) f.progress = progress;
  const result = await (await ctx.finisher()).finish(f);
  ctx.held.delete(id);
  if (!result.ok) {
    throw result.error instanceof LostJobError ? finishedError(ErrorCode.JobLockNotExist, id, command) : result.error;
  }
  return Date.now();
}

/** BullMQ's `removeOnComplete`/`removeOnFail`: remove at once, or keep within bounds (trimmed in the background). */
export function retention(
  ctx: BackendContext,
  trimmer: () => Promise<Trimmer>,
  kind: 'completed' | 'failed',
  option: boolean | number | { count?: number; age?: number } | undefined,
): boolean {
  const keep = keepPolicy(option, kind === 'completed' ? DEFAULT_KEEP_COMPLETED : DEFAULT_KEEP_FAILED);
  if (keep === 'remove') return true;
  void trimmer().then((t) => t.request(kind, keep), ctx.onError);
  return false;
}

/** BullMQ's stack trace of a failed attempt (a JSON array it built), newest last. */
export function stacktraceOf(fields: Record<string, unknown> | undefined): string[] {
  const raw = fields?.stacktrace;
  if (typeof raw !== 'string') return [];
  try {
    const parsed = JSON.parse(raw) as unknown;
    return Array.isArray(parsed) ? parsed.filter((s): s is string => typeof s === 'string') : [];
  } catch {
    return [];
  }
}

/** The held attempt with its stack trace cleared: BullMQ hands over the whole trace it keeps. */
export function withTrace(held: Held): Held {
  return { ...held, job: { ...held.job, record: { ...held.job.record, stacktrace: [] } } };
}

// ---- leases and progress ----------------------------------------------------

/** Renews the locks `tokens` hold; returns the ids that are no longer held. */
export async function extendLocks(
  ctx: BackendContext,
  jobIds: string[],
  tokens: string[],
  duration: number,
): Promise<string[]> {
  const lost: string[] = [];
  const leases: Lease[] = [];
  jobIds.forEach((id, i) => {
    const held = ctx.held.get(id);
    if (!held || held.lock !== tokens[i]) lost.push(id);
    else leases.push(leaseOf(held.job, held.progress));
  });
  if (leases.length === 0) return lost;
  const store = await ctx.store();
  const gone = await renewLeases(store, leases, { workerId: ctx.workerId, lockDuration: duration });
  for (const id of gone) ctx.held.delete(id);
  return [...lost, ...gone];
}

/**
 * Progress of a job: fenced by the attempt's token when this backend runs
 * it (kept in the claim), else written to the record at the version read; a
 * job running in another process is refused (its worker reports its progress).
 */
export async function updateProgress(ctx: BackendContext, jobId: string, progress: unknown): Promise<void> {
  const store = await ctx.store();
  const held = ctx.held.get(jobId);
  if (held) {
    held.progress = progress;
    const lease = leaseOf(held.job, progress);
    if (await reportProgress(store, lease, { workerId: ctx.workerId, lockDuration: ctx.lockDuration })) return;
    ctx.held.delete(jobId);
  }
  await rewriteRecord(ctx, jobId, 'updateProgress', (r) => ({ ...r, progress: progress as JobRecord['progress'] }), {
    missing: 'throw',
    receipt: false,
  });
}

/** Used by MinimalJob-taking operations. */
export type AnyJob = MinimalJob<unknown, unknown, string>;
