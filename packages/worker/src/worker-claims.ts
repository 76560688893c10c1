/**
 * A Worker's claim loop and the jobs it runs: how many slots are free, when
 * to claim (gathering freed slots on a thread pool, holding for a pause or a
 * rate limit), each claimed job run as an Attempt, its outcome written by
 * the Finisher and counted in the metrics.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job, JobProgress } from '@zkq/core';
import {
  type ClaimedJob,
  checkProgress,
  type Finish,
  type Finisher,
  type FinishResult,
  type JobSource,
  liveWindow,
  type QueueStore,
  type Span,
} from '@zkq/core/internal';
import { Attempt, type AttemptDriver } from './attempt.js';
import { DEFAULT_MAX_RATE_LIMIT_DELAY_MS, DEFAULT_RUN_RETRY_DELAY_MS } from './options.js';
import type { ThreadPool } from './sandbox/pool.js';
import { WorkerBase } from './worker-base.js';

/** With a thread pool, a claim waits for this share of the slots to be free... */
const GATHER_SHARE = 0.8;
/** ...or this long after the first one freed, ms (see gatherFor). */
const GATHER_MS = 1;

export class WorkerClaims<DataType = any, ResultType = any, NameType extends string = string> extends WorkerBase<
  DataType,
  ResultType,
  NameType
> {
  /** Waits for a nudge, or `ms` at most. */
  private waitForNudge(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => this.wakeClaimLoop(), ms);
      this.wakeLoop = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** A processor threw RateLimitError: claim nothing until the queue's window ends (at most maximumRateLimitDelay). */
  private async holdForRateLimit(): Promise<void> {
    const ttl = (await liveWindow(this.store as QueueStore))?.ttl ?? 0;
    const hold = Math.min(ttl, this.opts.maximumRateLimitDelay ?? DEFAULT_MAX_RATE_LIMIT_DELAY_MS);
    this.limitedUntil = Math.max(this.limitedUntil, performance.now() + hold);
  }

  protected async loop(): Promise<void> {
    const source = this.source as JobSource;
    while (!this.closing) {
      if (this.queuePaused() || this.localPaused) {
        source.leaveLine();
        await this.waitForNudge();
        continue;
      }
      const hold = this.limitedUntil - performance.now();
      if (hold > 0) {
        source.leaveLine();
        await this.waitForNudge(hold);
        continue;
      }
      const running = this.runningJobs();
      const free = this.freeSlots(running);
      if (free <= 0) {
        source.leaveLine();
        await this.waitForNudge();
        continue;
      }
      const gather = this.gatherFor(free, running);
      if (gather > 0) {
        await this.waitForNudge(gather);
        continue;
      }
      this.claiming = this.claimAndStart(source, free);
      try {
        await this.claiming;
      } catch (err) {
        if (this.closing) break;
        this.emitError(err);
        await sleep(this.opts.runRetryDelay ?? DEFAULT_RUN_RETRY_DELAY_MS);
      } finally {
        this.claiming = undefined;
      }
    }
  }

  /**
   * Claims up to `free` jobs and starts them. A claim sent before a pause or
   * a close still starts what it got: those jobs are this worker's now
   * (dropped, their claims would vanish with the session and count a stall);
   * a forced close alone leaves them to other workers.
   */
  private async claimAndStart(source: JobSource, free: number): Promise<void> {
    const claimed = await source.claim(free, () => {
      this.waitingForWork = true;
      this.onIdle();
    });
    if (claimed.length > 0) this.waitingForWork = false;
    for (const c of claimed) {
      if (this.forced) break;
      this.hadWork = true;
      this.process(c);
    }
  }

  /**
   * How much longer to wait for more free slots before claiming, ms (0:
   * claim now). Results of jobs on threads come back spread over a
   * millisecond or two, and a claim round costs about as much for a few
   * jobs as for all of them: claiming at the first free slot would make
   * every other round small. So with a thread pool, a claim waits until
   * GATHER_SHARE of the slots are free, GATHER_MS after the first one
   * freed at most; never while nothing runs (an idle worker claims at once).
   */
  private gatherFor(free: number, running: number): number {
    if (!this.pool || free >= Math.ceil(this.opts.concurrency * GATHER_SHARE) || running === 0) {
      this.gatherSince = undefined;
      return 0;
    }
    this.gatherSince ??= performance.now();
    const left = this.gatherSince + GATHER_MS - performance.now();
    if (left > 0) return left;
    this.gatherSince = undefined;
    return 0;
  }

  /** Jobs whose processor is running. */
  private runningJobs(): number {
    let running = 0;
    for (const a of this.attempts.values()) if (a.processing) running++;
    return running;
  }

  /**
   * Slots for new jobs: `concurrency` counts running processors, so the next
   * claim overlaps the writing of finished outcomes; at most `concurrency`
   * more jobs may be waiting for their outcome to be written.
   */
  private freeSlots(running: number): number {
    const c = this.opts.concurrency;
    return Math.min(c - running, 2 * c - this.attempts.size);
  }

  private onIdle(): void {
    this.finisher?.idle();
    if (this.hadWork && this.attempts.size === 0) {
      this.hadWork = false;
      this.emit('drained');
    }
  }

  /** What every attempt of this worker runs through (each passes itself). */
  private readonly driver: AttemptDriver = {
    run: (job, signal, attempt) =>
      this.execute(job as Job<DataType, ResultType, NameType>, signal, handOver(attempt.claimedJob)),
    finish: (f, attempt) => this.writeOutcome(f, attempt.span),
    forced: () => this.forced,
    released: () => this.wakeClaimLoop(),
    trim: (kind, keep) => this.trimmer?.request(kind, keep),
    rateLimited: () => void this.holdForRateLimit().catch((err) => this.emitError(err)),
  };

  private process(claimed: ClaimedJob): void {
    const attempt = new Attempt(this, claimed, this.store as QueueStore, this.opts, this.driver);
    this.attempts.set(claimed.record.id, attempt);
    this.cancels?.claimed(claimed.record.id, claimed.token);
    this.tracing
      .process(attempt.job, (s) => {
        attempt.span = s;
        return attempt.run();
      })
      .catch((err) => this.emitError(err))
      .finally(() => {
        claimed.bytes = undefined; // a job that did not run (stalled too often...) never handed them over
        this.attempts.delete(claimed.record.id);
        // a job it held that waits again was left out of its idle look (by id): look again now
        if (attempt.mayWaitAgain) this.nudge();
        else {
          this.wakeClaimLoop();
          // its last job ended while it waits for work: the queue ran dry now, not at the idle poll
          if (this.waitingForWork && this.attempts.size === 0) this.onIdle();
        }
      });
  }

  /** Writes an attempt's outcome (batched by the Finisher), traced, and counted in the queue's metrics. */
  private async writeOutcome(f: Finish, span: Span | undefined): Promise<FinishResult> {
    const result = await this.tracing.finish(f, span, () => (this.finisher as Finisher).finish(f));
    const kind = f.outcome.kind;
    if (result.ok && (kind === 'completed' || kind === 'failed')) this.collector?.record(kind);
    // a retry's backoff: this worker promotes it when due, should the leader not
    if (result.ok && f.outcome.kind === 'retry' && f.outcome.due > 0) this.housekeeper?.noteDue(f.outcome.due);
    return result;
  }

  /** Runs the job's processor: inline, or on a thread, which gets the record as claimed (`bytes`) when there is one. */
  private async execute(
    job: Job<DataType, ResultType, NameType>,
    signal: AbortSignal,
    bytes: Buffer | undefined,
  ): Promise<ResultType> {
    if (this.processorFn) return this.processorFn(job, job.token, signal);
    const attempt = this.attempts.get(job.id);
    try {
      return (await (this.pool as ThreadPool).run(
        bytes ?? job.toJSON(),
        job.token ?? '',
        signal,
        (progress, logs) => attempt?.absorb(storable(progress), logs),
        (value) => this.onThreadProgress(job.id, attempt, value),
      )) as ResultType;
    } catch (err) {
      // the pool stops waiting for an aborted job (ending its thread when it has one of its own):
      // the job fails with the cancel's reason
      if (signal.aborted && typeof signal.reason === 'string') throw new Error(signal.reason);
      throw err;
    }
  }

  /** Live progress of a thread's run: published while its own attempt still runs, dropped after. */
  private onThreadProgress(jobId: string, attempt: Attempt | undefined, value: unknown): void {
    if (!attempt || this.attempts.get(jobId) !== attempt) return;
    void attempt.job.updateProgress(value as JobProgress).catch((e) => this.emitError(e));
  }
}

/**
 * The record's bytes as the claim wrote them, for the job's thread, and
 * forgotten: the attempt (and a Job object kept after it, whose methods
 * report to it) must not hold a second copy of the record.
 */
function handOver(claimed: ClaimedJob): Buffer | undefined {
  const { bytes } = claimed;
  claimed.bytes = undefined;
  return bytes;
}

/**
 * A thread's final progress if it may be stored, else undefined (the last
 * one stored stands), as an inline job's progress is refused: a BigInt or
 * NaN crosses to the main thread but would fail the finish, leaving the
 * job active until its lease ran out; one over MAX_PROGRESS_BYTES would be
 * stored with it. Reported so, it was refused at the processor's call in
 * its thread already: what is left is a value changed after it was reported.
 */
function storable(progress: unknown): unknown {
  try {
    checkProgress(progress);
    return progress;
  } catch {
    return undefined;
  }
}
