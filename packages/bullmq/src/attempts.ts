/**
 * Adding jobs and running them, as BullMQ's Worker drives it, over the zkq
 * protocol: a claim is the protocol's claim (its fencing token is the record
 * version), and BullMQ's lock token names it inside this backend. Every
 * finish is the protocol's fenced finish, so a job revoked or claimed
 * elsewhere cannot complete here.
 */
import { type JobsOptions, LostJobError, MAX_PRIORITY, OutcomeUnknownError } from '@zkq/core';
import {
  buildRecords,
  type ClaimedJob,
  type Finish,
  type FinishedKind,
  type FlowJob,
  finishRetained,
  type JobRecord,
  type JobToBuild,
  type Lease,
  leaseOf,
  type Outcome,
  type QueueStore,
  type RetainedFinish,
  type Retention,
  type RetentionOption,
  renewLeases,
  reportProgress,
  retentionOf,
  sameAttempt,
  type Trimmer,
  type Turn,
  validateCustomJobId,
} from '@zkq/core/internal';
import { ErrorCode, type JobJson, type MinimalJob, type ParentKeyOpts } from 'bullmq';
import type { BackendContext, Held } from './context.js';
import { addEntries, checkDeduplication } from './dedup.js';
import { rewriteRecord } from './edits.js';
import { NotSupportedError } from './errors.js';
import { addFlowEntries, givenParentKey, missingParent, parentLinkOf } from './flows.js';
import { finishedError, toJobJson } from './json.js';

/** BullMQ's `[jobData, id, rateLimitDelay, delayUntil]`, empty when nothing was claimed. */
export type NextJob = [JobJson | null, string, number, number];
const NOTHING: NextJob = [null, '', 0, 0];
/** Tries of a claim round whose candidates were all taken by other workers first. */
const CLAIM_TRIES = 3;
/** BullMQ's reason for a job whose stalls passed maxStalledCount. */
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

// ---- adding -----------------------------------------------------------------

export interface AddEntry {
  job: JobJson;
  jobId: string;
  parentKeyOpts?: ParentKeyOpts;
}

/**
 * Adds jobs; a custom id that exists answers with that id (BullMQ's
 * de-duplication by id), a live deduplication key with the job it keeps.
 * `turn` keeps pipelined calls in call order (see CallOrder).
 */
export async function addJobs(ctx: BackendContext, entries: AddEntry[], turn?: Turn): Promise<string[]> {
  const store = await ctx.store();
  const prepared = await buildRecords(store, entries.map(toBuild));
  if (!prepared.some((p) => p.record.parentLink)) return addEntries(ctx, prepared, turn);
  // a job with a parent goes on its own, counted into its parent's dependencies in its transaction;
  // the jobs go one by one, the call keeping its place until the last is in (the caller passes the turn)
  await turn?.wait();
  const out: string[] = [];
  for (const [i, p] of prepared.entries()) {
    if (!p.record.parentLink) {
      out.push(...(await addEntries(ctx, [p])));
      continue;
    }
    const [[err, res] = [null, 0]] = await addFlowEntries(store, [{ queue: ctx.name, record: p.record, lane: p.lane }]);
    const e = entries[i] as AddEntry;
    if (res === ErrorCode.ParentJobNotExist) missingParent(givenParentKey(e.job, e.parentKeyOpts) ?? '', 'addJob');
    if (res === ErrorCode.ParentJobCannotBeReplaced) {
      throw finishedError(ErrorCode.ParentJobCannotBeReplaced, givenParentKey(e.job, e.parentKeyOpts) ?? '', 'addJob');
    }
    if (err) throw err; // a custom id that exists answers with that id (it joins the parent: BullMQ's duplicate)
    out.push(p.record.id);
  }
  return out;
}

/**
 * The jobs of a flow (FlowProducer's entries, roots first), built on the
 * root's queue `store`: a parent with children parks in waiting-children
 * (`addToWaitingChildren`).
 */
export async function toFlowJobs(
  store: QueueStore,
  entries: { jobData: JobJson; jobId: string; parentKeyOpts: ParentKeyOpts; queueName: string }[],
): Promise<FlowJob[]> {
  const built = await buildRecords(
    store,
    entries.map((e) => toBuild({ job: e.jobData, jobId: e.jobId, parentKeyOpts: e.parentKeyOpts })),
  );
  return built.map((b, i) => ({
    queue: (entries[i] as { queueName: string }).queueName,
    record: b.record,
    lane: b.lane,
  }));
}

/** BullMQ's job as core builds it, refused first when zkq cannot keep it (NotSupportedError) or BullMQ would not. */
function toBuild({ job, jobId, parentKeyOpts }: AddEntry): JobToBuild {
  const opts = job.opts ?? {};
  const parentLink = parentLinkOf(job, parentKeyOpts);
  if (parentLink && opts.deduplication) {
    throw new NotSupportedError('deduplication on a job with a parent');
  }
  if ((opts as { repeat?: unknown }).repeat) throw new NotSupportedError('repeatable jobs (job schedulers)');
  if ((opts as { debounce?: unknown }).debounce) throw new NotSupportedError('debounce (use deduplication)');
  checkDeduplication(opts.deduplication);
  if (jobId) validateCustomJobId(jobId);
  const priority = opts.priority ?? 0;
  if (!Number.isInteger(priority) || priority < 0 || priority > MAX_PRIORITY) {
    throw new RangeError(`Priority should be between 0 and ${MAX_PRIORITY}`);
  }
  const build: JobToBuild = {
    name: job.name,
    data: JSON.parse(job.data || '{}'),
    opts: opts as JobsOptions,
    id: jobId,
    // BullMQ's Job was made before it is added: its delay counts from then
    timestamp: job.timestamp,
    parked: parentKeyOpts?.addToWaitingChildren === true,
  };
  if (parentLink) build.parentLink = parentLink;
  return build;
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
          await this.ctx.startHousekeeping(); // the Worker runs (see the backend's start)
          const { jobs, ttl } = await this.claim(batch.length);
          batch.forEach((w, i) => {
            const job = jobs[i];
            if (!job) {
              // rate limited: BullMQ's Worker waits the ttl before it asks again
              w.resolve(ttl > 0 ? [null, '', ttl, 0] : NOTHING);
              return;
            }
            job.bytes = undefined; // for a thread pool; BullMQ's Worker runs the job from its JSON
            this.ctx.held.set(job.record.id, { job, lock: w.token });
            const json = toJobJson(job.record, this.ctx.prefix);
            // A job whose workers kept dying fails instead of running again (BullMQ's maxStalledCount),
            // failed by BullMQ's Worker as on Redis: it adds a scheduler's next iteration first.
            if (job.record.stalledCounter > this.ctx.maxStalledCount) json.deferredFailure = STALLED_TOO_OFTEN;
            w.resolve([json, job.record.id, 0, 0]);
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
      let taken: Awaited<ReturnType<typeof source.take>>;
      try {
        taken = await source.take(max - out.length);
      } catch (err) {
        if (out.length === 0) throw err;
        break; // jobs claimed by an earlier try of this round are handed out, not orphaned
      }
      if (taken === 'idle') {
        // the finishes of this worker may have drained the queue: BullMQ's `drained` (Finisher)
        if (out.length === 0) (await this.ctx.finisher()).idle();
        break;
      }
      if (!Array.isArray(taken)) {
        ttl = taken.ttl; // a global limit holds claims back (0: the global concurrency)
        break;
      }
      for (const job of taken) {
        // the previous attempt's worker died: BullMQ's Worker reports it as stalled
        if (job.stalled) this.ctx.noteStalled(job.record.id);
        out.push(job);
      }
    }
    return { jobs: out, ttl };
  }
}

// ---- finishing --------------------------------------------------------------

/**
 * The attempt `token` holds on `jobId`, or BullMQ's error: the job is
 * missing, not active, active under another lock, or its lock is gone.
 */
export async function heldBy(
  ctx: BackendContext,
  jobId: string,
  token: string | undefined,
  command: string,
): Promise<Held> {
  const held = ctx.held.get(jobId);
  if (!held) {
    const store = await ctx.store();
    const stored = await store.getJob(jobId);
    if (!stored) throw finishedError(ErrorCode.JobNotExist, jobId, command);
    if (stored.record.state !== 'active' && !(await store.getClaim(jobId))) {
      throw finishedError(ErrorCode.JobNotInState, jobId, command, 'active');
    }
    throw finishedError(ErrorCode.JobLockNotExist, jobId, command);
  }
  if (token !== undefined && token !== '0' && held.lock !== token) {
    throw finishedError(ErrorCode.JobLockMismatch, jobId, command, 'active');
  }
  return held;
}

/**
 * Writes an attempt's outcome; the attempt is no longer held either way.
 * A completion or failure goes with its retention (finishFinal).
 */
export async function finish(
  ctx: BackendContext,
  held: Held,
  outcome: Outcome,
  command: string,
  progress?: unknown,
  retained?: RetainedFinish,
): Promise<number> {
  const id = held.job.record.id;
  const f: Finish = { job: held.job, outcome };
  if (progress !== undefined) f.progress = progress;
  if (held.logged) f.logged = true;
  const result = retained ? await finishRetained(f, retained) : await (await ctx.finisher()).finish(f);
  release(ctx, id, held.job.token);
  if (!result.ok) {
    throw result.error instanceof LostJobError ? finishedError(ErrorCode.JobLockNotExist, id, command) : result.error;
  }
  return Date.now();
}

/**
 * BullMQ's moveToFinished: a completion or failure written with its
 * retention, `given` (the option BullMQ's Worker passes for the set it
 * finishes in) else the backend's, else zkq's. A job removed at once goes
 * in its finish's transaction: a parent takes its dependencies along
 * (`hasDeps`: it has some, though its record may not say so, children
 * having been added while it ran), a child leaves its parent's. What the
 * finish leaves of its set's bounds goes to the Trimmer.
 */
export async function finishFinal(
  ctx: BackendContext,
  held: Held,
  outcome: Extract<Outcome, { kind: FinishedKind }>,
  final: { given: RetentionOption; hasDeps?: boolean; trimmer: () => Promise<Trimmer> },
  progress?: unknown,
): Promise<number> {
  const { record } = held.job;
  const retention = (kind: FinishedKind): Retention =>
    retentionOf(
      kind,
      (kind === outcome.kind ? final.given : undefined) ?? keepOption(record.opts, kind) ?? keepOption(ctx.opts, kind),
    );
  // the finish drops the dependencies of a record that has them (the record is not written: it goes)
  const job =
    final.hasDeps && !record.hasDeps && retention(outcome.kind) === 'remove'
      ? { ...held, job: { ...held.job, record: { ...record, hasDeps: true } } }
      : held;
  return finish(ctx, job, outcome, 'moveToFinished', progress, {
    retention,
    write: async (f) => (await ctx.finisher()).finish(f),
    trim: (kind, keep) => void final.trimmer().then((t) => t.request(kind, keep), ctx.onError),
  });
}

/** A job's or backend's removeOnComplete / removeOnFail. */
function keepOption(
  opts: { removeOnComplete?: RetentionOption; removeOnFail?: RetentionOption },
  kind: FinishedKind,
): RetentionOption {
  return kind === 'completed' ? opts.removeOnComplete : opts.removeOnFail;
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
  const gone = await renewLeases(store, leases, { workerId: ctx.claimOwner, lockDuration: duration });
  // only the attempt renewed is forgotten: one claimed again meanwhile (a new token) stays held
  for (const l of gone) {
    const now = ctx.held.get(l.id);
    if (now && sameAttempt(l, now.job)) ctx.held.delete(l.id);
  }
  return [...lost, ...gone.map((l) => l.id)];
}

/**
 * Forgets the attempt at `token` on `jobId`, and only it: a job this backend
 * claimed again meanwhile (a new token) stays held.
 */
export function release(ctx: BackendContext, jobId: string, token: number | undefined): void {
  if (ctx.held.get(jobId)?.job.token === token) ctx.held.delete(jobId);
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
    const state = await reportProgress(store, lease, { workerId: ctx.claimOwner, lockDuration: ctx.lockDuration });
    if (state === 'renewed') return;
    // an outcome not learnt says nothing of the lease: the attempt goes on, and the caller hears of it
    if (state === 'unknown') throw new OutcomeUnknownError(undefined);
    release(ctx, jobId, held.job.token);
  }
  await rewriteRecord(ctx, jobId, 'updateProgress', (r) => ({ ...r, progress: progress as JobRecord['progress'] }), {
    missing: 'throw',
    receipt: true,
  });
}

/** Used by MinimalJob-taking operations. */
export type AnyJob = MinimalJob<unknown, unknown, string>;
