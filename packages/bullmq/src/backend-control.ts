/**
 * A ZooKeeperQueueBackend's edits of a queue and its jobs, besides adding and
 * running them: pause, drain, clean, obliterate, promote, remove, retry,
 * delays, priorities, data and logs (control.ts); the queue's meta and rate
 * limits (meta.ts); the event stream (events.ts); job schedulers
 * (schedulers.ts); deduplication keys (dedup.ts).
 */
import type { FinishedStatus, JobsOptions, MinimalJob, RepeatableOptions, RetryOptions, StreamReadRaw } from 'bullmq';
import type * as attempts from './attempts.js';
import { BackendReads } from './backend-reads.js';
import * as control from './control.js';
import * as dedup from './dedup.js';
import * as events from './events.js';
import * as flowRemoval from './flow-removal.js';
import * as meta from './meta.js';
import * as schedulers from './schedulers.js';

type Finished = FinishedStatus;

export class BackendControl extends BackendReads {
  // ---- control (control.ts) --------------------------------------------------

  pause(pause: boolean): Promise<void> {
    return control.pause(this.ctx, pause);
  }

  drain(delayed: boolean): Promise<void> {
    return control.drain(this.ctx, delayed);
  }

  cleanJobsByState(state: string, timestamp: number, limit = 0): Promise<string[]> {
    return control.cleanJobsByState(this.ctx, state, timestamp, limit);
  }

  obliterate(opts: { force: boolean; count: number }): Promise<number> {
    return control.obliterate(this.ctx, opts);
  }

  removeOrphanedJobs(count?: number, limit?: number): Promise<number> {
    return control.removeOrphanedJobs(this.ctx, count, limit);
  }

  promote(jobId: string): Promise<void> {
    return control.promote(this.ctx, jobId);
  }

  promoteJobs(count?: number): Promise<number> {
    return control.promoteJobs(this.ctx, count);
  }

  remove(jobId: string, removeChildren: boolean): Promise<number> {
    return control.remove(this.ctx, jobId, removeChildren);
  }

  removeUnprocessedChildren(jobId: string): Promise<void> {
    return flowRemoval.removeUnprocessedChildren(this.ctx, jobId);
  }

  removeChildDependency(jobId: string, parentKey: string): Promise<boolean> {
    return flowRemoval.removeChildDependency(this.ctx, jobId, parentKey);
  }

  retryFinishedJob<T = unknown, R = unknown, N extends string = string>(
    job: MinimalJob<T, R, N>,
    state: 'failed' | 'completed',
    opts?: RetryOptions,
  ): Promise<void> {
    return control.retryFinishedJob(this.ctx, job as attempts.AnyJob, state, opts);
  }

  retryFinishedJobs(state?: Finished, count?: number, timestamp?: number): Promise<number> {
    return control.retryFinishedJobs(this.ctx, state, count, timestamp);
  }

  changeDelay(jobId: string, delay: number): Promise<void> {
    return control.changeDelay(this.ctx, jobId, delay);
  }

  changePriority(jobId: string, priority?: number, lifo?: boolean): Promise<void> {
    return control.changePriority(this.ctx, jobId, priority, lifo);
  }

  updateData<T = unknown, R = unknown, N extends string = string>(job: MinimalJob<T, R, N>, data: T): Promise<void> {
    return control.updateData(this.ctx, job as attempts.AnyJob, data);
  }

  addLog(jobId: string, logRow: string, keepLogs?: number): Promise<number> {
    return control.addLog(this.ctx, jobId, logRow, keepLogs);
  }

  clearLogs(jobId: string, keepLogs?: number): Promise<void> {
    return control.clearLogs(this.ctx, jobId, keepLogs);
  }

  // ---- queue meta and rate limits (meta.ts) ----------------------------------

  setQueueMeta(values: Record<string, string | number>): Promise<number> {
    return meta.setQueueMeta(this.ctx, values);
  }

  getQueueMetaField(field: string): Promise<string | null> {
    return meta.getQueueMetaField(this.ctx, field);
  }

  getQueueMetaFields(fields: string[]): Promise<(string | null)[]> {
    return meta.getQueueMetaFields(this.ctx, fields);
  }

  getQueueMeta(): Promise<Record<string, string>> {
    return meta.getQueueMeta(this.ctx);
  }

  removeQueueMetaFields(fields: string[]): Promise<number> {
    return meta.removeQueueMetaFields(this.ctx, fields);
  }

  hasQueueMetaField(field: string): Promise<boolean> {
    return meta.hasQueueMetaField(this.ctx, field);
  }

  setRateLimit(expireTimeMs: number): Promise<void> {
    return meta.setRateLimit(this.ctx, expireTimeMs);
  }

  removeRateLimitKey(): Promise<number> {
    return meta.removeRateLimitKey(this.ctx);
  }

  async removeDeprecatedPriorityKey(): Promise<number> {
    return 0; // BullMQ's old Redis priority counter: nothing like it exists here
  }

  getRateLimitTtl(maxJobs?: number): Promise<number> {
    return meta.getRateLimitTtl(this.ctx, maxJobs);
  }

  // ---- events (events.ts) ----------------------------------------------------

  trimEvents(maxLength: number): Promise<number> {
    return events.trimEvents(this.ctx, maxLength);
  }

  publishEvent(fields: Record<string, string | number>, maxEvents: number): Promise<string> {
    return events.publishEvent(this.ctx, fields, maxEvents);
  }

  readEvents(id: string, blockTimeout: number): Promise<StreamReadRaw> {
    return events.readEvents(this.ctx, id, blockTimeout);
  }

  // ---- job schedulers (schedulers.ts) ---------------------------------------------

  addJobScheduler(
    jobSchedulerId: string,
    nextMillis: number,
    templateData: string,
    templateOpts: JobsOptions,
    opts: RepeatableOptions,
    delayedJobOpts: JobsOptions,
    _producerId?: string,
  ): Promise<[string, number]> {
    return schedulers.addJobScheduler(
      this.ctx,
      jobSchedulerId,
      nextMillis,
      templateData,
      templateOpts,
      opts,
      delayedJobOpts,
    );
  }

  updateJobSchedulerNextMillis(
    jobSchedulerId: string,
    nextMillis: number,
    _templateData: string,
    delayedJobOpts: JobsOptions,
    producerId?: string,
  ): Promise<string | null> {
    return schedulers.updateJobSchedulerNextMillis(this.ctx, jobSchedulerId, nextMillis, delayedJobOpts, producerId);
  }

  removeJobScheduler(jobSchedulerId: string): Promise<number> {
    return schedulers.removeJobScheduler(this.ctx, jobSchedulerId);
  }

  getJobScheduler(id: string): Promise<[string[] | null, string | null]> {
    return schedulers.getJobScheduler(this.ctx, id);
  }

  isJobScheduler(id: string): Promise<boolean> {
    return schedulers.isJobScheduler(this.ctx, id);
  }

  getJobSchedulerData(key: string): Promise<Record<string, string>> {
    return schedulers.getJobSchedulerData(this.ctx, key);
  }

  getJobSchedulersRange(start: number, end: number, asc: boolean): Promise<string[]> {
    return schedulers.getJobSchedulersRange(this.ctx, start, end, asc);
  }

  getJobSchedulersCount(): Promise<number> {
    return schedulers.getJobSchedulersCount(this.ctx);
  }

  // ---- deduplication keys (dedup.ts) ----------------------------------------------

  removeDeduplicationKey(deduplicationId: string, jobId: string): Promise<number> {
    return dedup.removeDeduplicationKey(this.ctx, deduplicationId, jobId);
  }

  deleteDeduplicationKey(deduplicationId: string): Promise<number> {
    return dedup.deleteDeduplicationKey(this.ctx, deduplicationId);
  }
}
