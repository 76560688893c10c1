/**
 * Attempt: one run of one claimed job, from processor start to the fenced
 * write of its outcome, with the events the Worker emits on the way.
 */

import { performance } from 'node:perf_hooks';
import {
  Job,
  type JobProgress,
  JobStateError,
  type KeepJobs,
  LostJobError,
  NoPendingChildrenError,
  UnrecoverableError,
} from '@zkq/core';
import {
  type AttemptHooks,
  advanceAfterClaim,
  attemptKey,
  type ClaimedJob,
  type Finish,
  type FinishedKind,
  type FinishResult,
  finishRetained,
  hasDependencies,
  isRateLimitError,
  isWaitingChildrenError,
  leaseOf,
  type Outcome,
  type QueueStore,
  type Retention,
  renewLeaseStates,
  reportProgress,
  retentionOf,
  type Span,
  sameAttempt,
} from '@zkq/core/internal';
import { backoffDelay, normalizeBackoff } from './backoff.js';
import type { Lease } from './lease-renewer.js';
import type { WorkerOptions } from './options.js';

/** What an attempt needs from its Worker (one for all its attempts: each passes itself). */
export interface AttemptDriver {
  run(job: Job, signal: AbortSignal, attempt: Attempt): Promise<unknown>;
  finish(f: Finish, attempt: Attempt): Promise<FinishResult>;
  forced(): boolean;
  /** The processor has settled: its slot may take the next job while the outcome is written. */
  released(attempt: Attempt): void;
  trim(kind: FinishedKind, keep: KeepJobs): void;
  /** The processor threw a RateLimitError and its job is back to waiting: wait out the window. */
  rateLimited(): void;
}

/** The Worker as an attempt sees it: events and errors. */
interface Emitter {
  readonly id: string;
  emit(event: string, ...args: unknown[]): boolean;
  emitError(err: unknown): void;
}

/** The attempt is its Job's hooks (progress, logs, parking): no object of closures per job. */
export class Attempt implements AttemptHooks {
  readonly job: Job;
  /** The attempt's `process` span, when the Worker traces. */
  span: Span | undefined;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly controller = new AbortController();
  private readonly logs: string[] = [];
  private progress: unknown;
  private revoked = false;
  /** The processor threw a RateLimitError: the job goes back to waiting, uncounted and unreported. */
  private limited = false;
  /** Where `job.moveToWaitingChildren()` stands: once parked, the attempt is over and writes nothing more. */
  private parking: 'no' | 'writing' | 'parked' = 'no';
  /** A renewal failed while the park was being written: a revocation, unless the park is what moved the record. */
  private revokedWhileParking = false;
  /** The park being written, for a processor that ends without awaiting it. */
  private parkWrite: Promise<boolean> | undefined;
  /** The failure's outcome and the error it came from, for the `failed` event. */
  private failedWith: { outcome: Outcome; error: Error } | undefined;
  /** True while the processor runs (what `concurrency` counts). */
  processing = true;
  /**
   * The job may wait to be claimed again once this attempt ends (lost, or put
   * back to waiting): the worker's idle look left it out while it held it.
   */
  mayWaitAgain = false;

  constructor(
    private readonly worker: Emitter,
    private readonly claimed: ClaimedJob,
    private readonly store: QueueStore,
    private readonly opts: WorkerOptions & { maxStalledCount: number; lockDuration: number },
    private readonly driver: AttemptDriver,
  ) {
    this.done = new Promise((r) => {
      this.resolveDone = r;
    });
    this.job = new Job(store, claimed.record, this);
    this.job.token = attemptKey(claimed);
  }

  get claimedJob(): ClaimedJob {
    return this.claimed;
  }

  async log(row: string): Promise<number> {
    return this.logs.push(row);
  }

  moveToWaitingChildren(): Promise<boolean> {
    if (this.parking !== 'writing') this.parkWrite = this.park(); // a call meanwhile shares the write
    return this.parkWrite as Promise<boolean>;
  }

  get token(): number {
    return this.claimed.token;
  }

  lease(): Lease {
    return leaseOf(this.claimed, this.progress);
  }

  /** Whether the attempt still holds its claim for renewals (not once it parks the job). */
  get holdsClaim(): boolean {
    return this.parking === 'no';
  }

  /** The lease `lost` was this attempt's (not an earlier attempt of the same job): revoke it. */
  revokeIf(lost: Lease): void {
    if (sameAttempt(lost, this.claimed)) this.revoke();
  }

  /** The claim was revoked: abort the processor; its result will be dropped. */
  revoke(): void {
    if (this.parking === 'parked') return;
    if (this.parking === 'writing') {
      this.revokedWhileParking = true;
      return;
    }
    this.revoked = true;
    this.abort();
  }

  /**
   * Fires the processor's signal. On a forced close the attempt is over at
   * once, whether or not the processor honours the signal: its result would
   * be dropped anyway, and the worker must not wait for it to end its session
   * (which frees the claim for other workers).
   */
  abort(): void {
    this.controller.abort(new Error(`job ${this.job.id} aborted`));
    if (this.driver.forced()) {
      this.release();
      this.resolveDone();
    }
  }

  /**
   * A cancel request reached this attempt: the processor's signal fires with
   * `reason` (as BullMQ's `worker.cancelJob` does); the error the processor
   * throws decides what follows. One that ignores the signal runs on.
   */
  cancel(reason: string | undefined): void {
    this.controller.abort(reason);
  }

  /** Takes the final progress and the log lines a thread reported with its result. */
  absorb(progress: unknown, logs: string[]): void {
    if (progress !== undefined) this.progress = progress;
    this.logs.push(...logs);
  }

  /**
   * Publishes progress, fenced like a lease renewal. A value over
   * MAX_PROGRESS_BYTES is refused (PayloadTooLargeError) and changes nothing;
   * a job no longer owned is revoked here and now. A write whose outcome
   * could not be learnt (its connection lost again and again) revokes
   * nothing: the attempt goes on, its progress kept for the finish, and the
   * next renewal proves the lease.
   */
  async updateProgress(progress: JobProgress): Promise<void> {
    const lease = leaseOf(this.claimed, progress);
    const state = await reportProgress(this.store, lease, {
      workerId: this.worker.id,
      lockDuration: this.opts.lockDuration,
    });
    this.progress = progress;
    if (state === 'lost') {
      this.revoke();
      return;
    }
    if (state === 'renewed') this.worker.emit('progress', this.job, progress);
  }

  /**
   * Parks the job in waiting-children (the attempt's fenced finish, outcome
   * `waiting-children`): true once written; false when no child is pending
   * (the attempt goes on, still holding its claim). FailedChildrenError when
   * a child failed it; LostJobError when the claim was lost.
   */
  private async park(): Promise<boolean> {
    if (this.parking === 'parked') return true;
    if (this.revoked) throw new LostJobError(this.job.id);
    this.parking = 'writing';
    let result: FinishResult | undefined;
    try {
      result = await this.driver.finish(
        { job: this.claimed, outcome: { kind: 'waiting-children' }, logs: [...this.logs], progress: this.progress },
        this,
      );
    } finally {
      this.parking = result?.ok ? 'parked' : 'no';
      if (this.parking === 'no' && this.revokedWhileParking) this.revoke();
      this.revokedWhileParking = false;
    }
    if (result.ok) return true;
    if (result.error instanceof NoPendingChildrenError) return false;
    if (result.error instanceof LostJobError) this.revoke();
    throw result.error;
  }

  private release(): void {
    if (!this.processing) return;
    this.processing = false;
    this.driver.released(this);
  }

  async run(): Promise<void> {
    try {
      let outcome = await this.outcome();
      if (!outcome || this.driver.forced()) return;
      if (this.revoked) return this.lost(new LostJobError(this.job.id));
      const result = await this.write(outcome);
      if (!result.ok) return this.lost(result.error as Error);
      // too large to store: the job failed for good instead (sizes.ts)
      if (result.replaced) outcome = result.replaced;
      if (outcome.kind === 'retry') this.mayWaitAgain = true;
      if (this.limited) this.driver.rateLimited();
      else this.report(outcome);
    } finally {
      this.release();
      this.resolveDone();
    }
  }

  /** Runs the processor and decides where the job goes; undefined when aborted by a forced close. */
  private async outcome(): Promise<Outcome | undefined> {
    const record = this.claimed.record;
    if (record.stalledCounter > this.opts.maxStalledCount) {
      this.worker.emit('stalled', this.job.id, 'active');
      return this.failure(new Error('job stalled more than allowable limit'), true);
    }
    // a child failed this parent (failParentOnFailure) while it waited: it fails without running
    if (record.deferredFailure) return this.failure(new Error(record.deferredFailure), true);
    // a scheduler's iteration adds the next one as it starts (as BullMQ's Worker does), so a slow
    // or failing run does not hold the schedule up; a failure to add it is reported, not the job's.
    // Before the proof below: an advance held up past the lease must not let a revoked claim start.
    if ((record.opts as { repeatJobKey?: string }).repeatJobKey) {
      await advanceAfterClaim(this.store, record).catch((err) => this.worker.emitError(err));
    }
    let proof: number | undefined = this.claimed.claimedAt;
    // Checked right before the processor starts, with no wait in between (see renewBeforeStart).
    while (performance.now() - proof >= this.opts.lockDuration / 2) {
      proof = await this.renewBeforeStart();
      if (proof === undefined) return this.revokedBeforeStart();
    }
    this.worker.emit('active', this.job, 'waiting');
    try {
      const value = await this.driver.run(this.job, this.controller.signal, this);
      this.release();
      await this.parkWrite?.catch(() => false);
      if (this.parking === 'parked') return this.afterPark(undefined);
      // removed at once or kept: its retention decides as it is written (finishRetained)
      return { kind: 'completed', returnvalue: value ?? null, remove: false };
    } catch (err) {
      this.release();
      if (this.driver.forced()) return undefined;
      await this.parkWrite?.catch(() => false);
      if (this.parking === 'parked') return this.afterPark(err);
      if (isWaitingChildrenError(err)) {
        return this.failure(
          new Error('WaitingChildrenError thrown, but the job was not moved to waiting-children'),
          false,
        );
      }
      if (isRateLimitError(err)) {
        this.limited = true;
        return { kind: 'retry', reason: '', stacktrace: [], due: 0, skipAttempt: true };
      }
      return this.failure(err instanceof Error ? err : new Error(String(err)), false);
    }
  }

  /**
   * The processor ended after parking its job: the attempt is over and writes
   * nothing. Anything but a WaitingChildrenError is reported, as its result
   * (or error) is dropped.
   */
  private afterPark(err: unknown): undefined {
    if (!isWaitingChildrenError(err)) {
      const ended = err === undefined ? 'returned' : `threw '${err instanceof Error ? err.message : String(err)}'`;
      this.worker.emitError(
        new JobStateError(this.job.id, `moved to waiting-children, then its processor ${ended}: that was dropped`),
      );
    }
    return undefined;
  }

  /**
   * Proves the claim is still ours to start the processor on. Within half a
   * lease of the last proof (the claim, or a renewal) it must be: the leader
   * revokes only a claim unrenewed for a whole lease. Later (the process was
   * stopped, or its event loop blocked, in between) a fenced renewal proves
   * it again, so that a job completed elsewhere meanwhile is never started
   * again. Resolves with the time of the proof; the caller compares it with
   * the clock again with no wait before it starts the processor.
   */
  private async renewBeforeStart(): Promise<number | undefined> {
    const sent = performance.now();
    // a proof: a renewal whose outcome is unknown proves nothing
    const [state] = await renewLeaseStates(this.store, [this.lease()], {
      workerId: this.worker.id,
      lockDuration: this.opts.lockDuration,
    });
    return state === 'renewed' ? sent : undefined;
  }

  /** The claim was revoked before the processor started: nothing runs, the job is reported lost. */
  private revokedBeforeStart(): undefined {
    this.revoked = true;
    this.lost(new LostJobError(this.job.id));
    return undefined;
  }

  private async failure(err: Error, final: boolean): Promise<Outcome> {
    const record = this.claimed.record;
    const attemptsMade = record.attemptsMade + 1;
    const stacktrace = err.stack ? [err.stack] : [];
    this.job.failedReason = err.message;
    const unrecoverable = err instanceof UnrecoverableError || err.name === 'UnrecoverableError';
    let outcome: Outcome = { kind: 'failed', reason: err.message, stacktrace, remove: false };
    if (!final && !unrecoverable && attemptsMade < (record.opts.attempts ?? 1)) {
      const backoff = normalizeBackoff(record.opts.backoff);
      const delay = await backoffDelay(backoff, attemptsMade, err, this.job, this.opts.settings?.backoffStrategy);
      if (delay >= 0) {
        const due = delay > 0 ? this.store.clock.fromLocal(Date.now() + delay) : 0;
        outcome = { kind: 'retry', reason: err.message, stacktrace, due };
      }
    }
    this.failedWith = { outcome, error: err };
    return outcome;
  }

  /** The job's retention in a finished set: its own option, else the Worker's, else zkq's. */
  private retention(kind: FinishedKind): Retention {
    const opts = this.claimed.record.opts;
    return kind === 'completed'
      ? retentionOf(kind, opts.removeOnComplete ?? this.opts.removeOnComplete)
      : retentionOf(kind, opts.removeOnFail ?? this.opts.removeOnFail);
  }

  /**
   * Writes the outcome. An unknown outcome (a lost reply, an expired session)
   * is settled by the transaction executor, which reads the transaction's
   * receipt back before sending it again.
   */
  private write(outcome: Outcome): Promise<FinishResult> {
    return finishRetained(
      { job: this.claimed, outcome, logs: this.logs, progress: this.progress },
      {
        retention: (kind) => this.retention(kind),
        write: (f) => this.driver.finish(f, this),
        trim: (kind, keep) => this.driver.trim(kind, keep),
        hasDeps: () => hasDependencies(this.store, this.claimed.record, (err) => this.worker.emitError(err)),
      },
    );
  }

  private lost(error: Error): void {
    this.mayWaitAgain = true;
    this.worker.emit('lost', this.job, error);
  }

  private report(outcome: Outcome): void {
    const job = this.job;
    job.finishedOn = Date.now();
    job.attemptsMade = this.claimed.record.attemptsMade + 1;
    if (outcome.kind === 'completed') {
      job.returnvalue = outcome.returnvalue;
      this.worker.emit('completed', job, outcome.returnvalue, 'active');
    } else if (outcome.kind !== 'waiting-children') {
      job.failedReason = outcome.reason;
      // the processor's own error, as BullMQ's `failed` carries (a thread's comes back as a
      // ProcessorThreadError: its name, message, stack and code); one for the reason when a
      // failure too large to store was written in its place
      const error = this.failedWith?.outcome === outcome ? this.failedWith.error : new Error(outcome.reason);
      this.worker.emit('failed', job, error, 'active');
    }
  }
}
