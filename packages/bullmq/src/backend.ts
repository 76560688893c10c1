/**
 * ZooKeeperQueueBackend: BullMQ's IQueueBackend over the zkq protocol. Each
 * operation lives in the module of its kind (attempts, reads, control, meta,
 * events), which works on the same znode layout as zkq's own Queue and
 * Worker. The class comes in layers, one subject each: backend-base.ts
 * (context, start, close, identity), backend-reads.ts (reads),
 * backend-control.ts (edits, meta, events, schedulers, deduplication keys),
 * and here adding and running jobs.
 */
import type {
  IQueueBackend,
  JobJson,
  JobProgress,
  KeepJobs,
  MinimalJob,
  MoveToDelayedOpts,
  MoveToWaitingChildrenOpts,
  ParentKeyOpts,
  RetryJobOpts,
} from 'bullmq';
import * as attempts from './attempts.js';
import { BackendControl } from './backend-control.js';
import type { BackendContext } from './context.js';
import * as flows from './flows.js';
import * as meta from './meta.js';

type Keep = boolean | number | KeepJobs;

export class ZooKeeperQueueBackend extends BackendControl implements IQueueBackend {
  forQueue(queueName: string, _prefix?: string): IQueueBackend {
    const { BackendContext: Ctx } = this.ctxModule;
    return new ZooKeeperQueueBackend(new Ctx(queueName, this.ctx.opts, this.ctx.shared, this.ctx.onError), false, {
      worker: false,
      listener: false,
    });
  }

  /** The context class, read from the instance so forQueue needs no import cycle. */
  private get ctxModule(): { BackendContext: typeof BackendContext } {
    return { BackendContext: this.ctx.constructor as typeof BackendContext };
  }

  // ---- adding ---------------------------------------------------------------

  async addJob(job: JobJson, jobId: string, parentKeyOpts?: ParentKeyOpts): Promise<string> {
    const [id] = await this.addJobs([{ job, jobId, ...(parentKeyOpts ? { parentKeyOpts } : {}) }]);
    return id as string;
  }

  addJobs(entries: { job: JobJson; jobId: string; parentKeyOpts?: ParentKeyOpts }[]): Promise<string[]> {
    return this.addOrder.run((turn) => attempts.addJobs(this.ctx, entries, turn));
  }

  async addFlow(
    entries: { jobData: JobJson; jobId: string; parentKeyOpts: ParentKeyOpts; prefix: string; queueName: string }[],
  ): Promise<[Error | null, string | number][]> {
    if (entries.length === 0) return [];
    // a FlowProducer's backend is bound to no queue: the flow runs from its root's
    const store = await this.ctx.shared.store((entries[0] as { queueName: string }).queueName);
    await store.init();
    return flows.addFlowEntries(store, await attempts.toFlowJobs(store, entries));
  }

  // ---- running --------------------------------------------------------------

  moveToActive(token: string, _name?: string): Promise<attempts.NextJob> {
    return this.claimer.next(token);
  }

  async moveToCompleted<T = unknown, R = unknown, N extends string = string>(
    job: MinimalJob<T, R, N>,
    returnValue: R,
    removeOnComplete: Keep,
    token: string,
    fetchNext: boolean,
  ): Promise<{ result: undefined | attempts.NextJob; finishedOn: number }> {
    const held = await attempts.heldBy(this.ctx, job.id as string, token, 'moveToFinished');
    const hasDeps = await flows.checkCompletable(this.ctx, held.job.record);
    const finishedOn = await attempts.finishFinal(
      this.ctx,
      held,
      { kind: 'completed', returnvalue: returnValue ?? null, remove: false },
      { given: removeOnComplete, hasDeps, trimmer: () => this.trimmer() },
      held.progress,
    );
    await this.ctx.countFinished('completed', finishedOn);
    return { result: fetchNext && !this.closing ? await this.moveToActive(token) : undefined, finishedOn };
  }

  async moveToFailed<T = unknown, R = unknown, N extends string = string>(
    job: MinimalJob<T, R, N>,
    failedReason: string,
    removeOnFail: Keep,
    token: string,
    fetchNext: boolean,
    fieldsToUpdate?: Record<string, unknown>,
  ): Promise<{ result: undefined | attempts.NextJob; finishedOn: number }> {
    const held = await attempts.heldBy(this.ctx, job.id as string, token, 'moveToFinished');
    const stacktrace = attempts.stacktraceOf(fieldsToUpdate);
    const hasDeps = await flows.hasDependencies(this.ctx, held.job.record);
    const finishedOn = await attempts.finishFinal(
      this.ctx,
      attempts.withTrace(held),
      { kind: 'failed', reason: failedReason, stacktrace, remove: false },
      { given: removeOnFail, hasDeps, trimmer: () => this.trimmer() },
      held.progress,
    );
    await this.ctx.countFinished('failed', finishedOn);
    return { result: fetchNext && !this.closing ? await this.moveToActive(token) : undefined, finishedOn };
  }

  async moveToDelayed(
    jobId: string,
    timestamp: number,
    delay: number,
    token?: string,
    opts?: MoveToDelayedOpts,
  ): Promise<attempts.NextJob | []> {
    const held = await attempts.heldBy(this.ctx, jobId, token, 'moveToDelayed');
    const fields = opts?.fieldsToUpdate as Record<string, unknown> | undefined;
    const traced = attempts.withTrace(held);
    traced.job.record.delay = Math.max(delay, 0); // BullMQ's job.delay: the backoff applied
    const due = (await this.ctx.store()).clock.fromLocal(timestamp + Math.max(delay, 0));
    await attempts.finish(
      this.ctx,
      traced,
      {
        kind: 'retry',
        reason: typeof fields?.failedReason === 'string' ? fields.failedReason : '',
        stacktrace: attempts.stacktraceOf(fields),
        due,
        skipAttempt: opts?.skipAttempt === true,
      },
      'moveToDelayed',
      held.progress,
    );
    this.ctx.noteDue(due); // this worker promotes it when due, should the leader not
    if (opts?.fetchNext && token && !this.closing) {
      const next = await this.moveToActive(token);
      if (next[0]) return next;
    }
    return [];
  }

  async moveToWaitingChildren(jobId: string, token: string, opts?: MoveToWaitingChildrenOpts): Promise<boolean> {
    const held = this.ctx.held.get(jobId);
    const parked = await flows.moveToWaitingChildren(this.ctx, jobId, token, opts?.child);
    if (parked && held) attempts.release(this.ctx, jobId, held.job.token);
    return parked;
  }

  async moveJobFromActiveToWait(jobId: string, token?: string): Promise<number> {
    const held = await attempts.heldBy(this.ctx, jobId, token, 'moveJobFromActiveToWait');
    await attempts.finish(
      this.ctx,
      held,
      { kind: 'retry', reason: '', stacktrace: [], due: 0, skipAttempt: true },
      'moveJobFromActiveToWait',
    );
    return meta.rateLimitTtl(this.ctx);
  }

  async retryJob(jobId: string, _lifo: boolean, token?: string, opts?: RetryJobOpts): Promise<void> {
    const held = await attempts.heldBy(this.ctx, jobId, token, 'retryJob');
    const fields = opts?.fieldsToUpdate as Record<string, unknown> | undefined;
    await attempts.finish(
      this.ctx,
      attempts.withTrace(held),
      {
        kind: 'retry',
        reason: typeof fields?.failedReason === 'string' ? fields.failedReason : '',
        stacktrace: attempts.stacktraceOf(fields),
        due: 0,
      },
      'retryJob',
      held.progress,
    );
  }

  async moveStalledJobsToWait(): Promise<string[]> {
    await this.ctx.startHousekeeping(); // the Worker runs (see start())
    return this.ctx.takeStalled();
  }

  extendLock(jobId: string, token: string, duration: number): Promise<number> {
    return attempts.extendLocks(this.ctx, [jobId], [token], duration).then((lost) => (lost.length ? 0 : 1));
  }

  extendLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    return attempts.extendLocks(this.ctx, jobIds, tokens, duration);
  }

  updateProgress(jobId: string, progress: JobProgress): Promise<void> {
    return attempts.updateProgress(this.ctx, jobId, progress);
  }

  async waitForJob(blockTimeout: number): Promise<{ member: string; score: number } | null> {
    if (this.closing) return null;
    const source = await this.ctx.source();
    await source.waitForWork(Math.max(blockTimeout, this.minimumBlockTimeout) * 1000);
    return null;
  }

  async disconnectBlocking(_wait?: boolean): Promise<void> {
    // BullMQ stops waiting (pause, close): out of the idle line too, or the Workers behind would wait on it
    const source = this.ctx.existingSource();
    source?.leaveLine();
    source?.poke();
  }

  async reconnectBlocking(): Promise<void> {
    // the wait runs on the session, which reconnects by itself
  }
}
