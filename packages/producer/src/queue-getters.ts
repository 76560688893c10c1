/**
 * A Queue's reads: jobs by id and by state, counts, the pause flag, the
 * per-minute metrics and their Prometheus export. None of them writes.
 */
import { InvalidArgumentError, Job, type JobCounts, type JobState, type JobType, type Metrics } from '@zkq/core';
import { getJobCounts, getMetrics, listJobIds, type MetricsKind, validateJobId } from '@zkq/core/internal';
import { prometheusText } from './prometheus.js';
import { QueueBase } from './queue-base.js';

export class QueueGetters<DataType = any, ResultType = any, NameType extends string = string> extends QueueBase<
  DataType,
  ResultType,
  NameType
> {
  /** The job with this id, or undefined. */
  async getJob(jobId: string): Promise<Job<DataType, ResultType, NameType> | undefined> {
    validateJobId(jobId);
    const store = await this.store();
    const stored = await store.getJob(jobId);
    return stored ? new Job<DataType, ResultType, NameType>(store, stored.record) : undefined;
  }

  /** The job's state (`'unknown'` when it does not exist). */
  async getJobState(jobId: string): Promise<JobState | 'unknown'> {
    const job = await this.getJob(jobId);
    return job ? job.getState() : 'unknown';
  }

  /** Counts per state; all states when none are named. */
  async getJobCounts(...types: JobType[]): Promise<JobCounts> {
    return getJobCounts(await this.store(), types.flat() as JobType[]);
  }

  /** Count of jobs in the named states together. */
  async getJobCountByTypes(...types: JobType[]): Promise<number> {
    const counts = await this.getJobCounts(...types);
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  /** Jobs in the given states, `start`..`end` inclusive (-1: to the end) of each state's order. */
  async getJobs(
    types: JobType | JobType[] = ['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized'],
    start = 0,
    end = -1,
    asc = false,
  ): Promise<Job<DataType, ResultType, NameType>[]> {
    const store = await this.store();
    const list = Array.isArray(types) ? types : [types];
    const limit = end < 0 ? Number.MAX_SAFE_INTEGER : end + 1;
    const ids: string[] = [];
    for (const t of list) ids.push(...(await listJobIds(store, t, limit, asc)));
    const window = ids.slice(start, end < 0 ? undefined : end + 1);
    const stored = await Promise.all(window.map((id) => store.getJob(id)));
    return stored.flatMap((s) => (s ? [new Job<DataType, ResultType, NameType>(store, s.record)] : []));
  }

  async getWaiting(start = 0, end = -1) {
    return this.getJobs(['waiting'], start, end, true);
  }
  async getActive(start = 0, end = -1) {
    return this.getJobs(['active'], start, end, true);
  }
  async getDelayed(start = 0, end = -1) {
    return this.getJobs(['delayed'], start, end, true);
  }
  async getCompleted(start = 0, end = -1) {
    return this.getJobs(['completed'], start, end, false);
  }
  async getFailed(start = 0, end = -1) {
    return this.getJobs(['failed'], start, end, false);
  }
  /** Parents waiting for their children (flows), oldest first. */
  async getWaitingChildren(start = 0, end = -1) {
    return this.getJobs(['waiting-children'], start, end, true);
  }
  async getWaitingChildrenCount(): Promise<number> {
    return this.getJobCountByTypes('waiting-children');
  }
  /** Count of one state's jobs, as BullMQ's getters of the same names. */
  async getWaitingCount(): Promise<number> {
    return this.getJobCountByTypes('waiting');
  }
  async getActiveCount(): Promise<number> {
    return this.getJobCountByTypes('active');
  }
  async getDelayedCount(): Promise<number> {
    return this.getJobCountByTypes('delayed');
  }
  async getPrioritizedCount(): Promise<number> {
    return this.getJobCountByTypes('prioritized');
  }
  async getCompletedCount(): Promise<number> {
    return this.getJobCountByTypes('completed');
  }
  async getFailedCount(): Promise<number> {
    return this.getJobCountByTypes('failed');
  }
  /** Jobs yet to run: waiting (or paused), delayed, prioritized, and parents waiting for their children. */
  async count(): Promise<number> {
    return this.getJobCountByTypes('waiting', 'paused', 'delayed', 'prioritized', 'waiting-children');
  }

  async isPaused(): Promise<boolean> {
    return (await this.store()).isPaused();
  }

  // ---- metrics ----------------------------------------------------------------

  /**
   * BullMQ's getMetrics: jobs completed (or failed) per minute, newest first,
   * points `start`..`end` (-1: the oldest). Collected by workers with the
   * `metrics` option; see docs/metrics.md.
   */
  async getMetrics(type: MetricsKind, start = 0, end = -1): Promise<Metrics> {
    if (type !== 'completed' && type !== 'failed')
      throw new InvalidArgumentError("type must be 'completed' or 'failed'", 'type');
    if (!Number.isInteger(start) || !Number.isInteger(end))
      throw new InvalidArgumentError('start and end must be integers', 'start');
    return getMetrics(await this.store(), type, start, end);
  }

  /**
   * BullMQ's exportPrometheusMetrics: job counts per state and the completed
   * and failed totals in Prometheus's text format, with `globalVariables` as
   * extra labels of every sample. Read once per call, for the whole queue.
   */
  async exportPrometheusMetrics(globalVariables?: Record<string, string>): Promise<string> {
    const [counts, completed, failed] = await Promise.all([
      this.getJobCounts(),
      this.getMetrics('completed'),
      this.getMetrics('failed'),
    ]);
    return prometheusText(this.name, counts, completed.meta.count, failed.meta.count, globalVariables);
  }
}
