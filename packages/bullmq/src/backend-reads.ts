/**
 * A ZooKeeperQueueBackend's reads: job states and data, counts, ranges,
 * logs, metrics, workers, dependencies and deduplication ids (reads.ts,
 * flow-reads.ts).
 */
import type { DependenciesOpts, IQueueBackend, JobJson, JobState, JobType } from 'bullmq';
import { BackendBase } from './backend-base.js';
import * as flowReads from './flow-reads.js';
import * as reads from './reads.js';

export class BackendReads extends BackendBase {
  // ---- reads (reads.ts) ------------------------------------------------------

  getState(jobId: string): Promise<JobState | 'unknown'> {
    return reads.getState(this.ctx, jobId);
  }

  isFinished(jobId: string, returnValue?: boolean): Promise<number | [number, string]> {
    return reads.isFinished(this.ctx, jobId, returnValue);
  }

  isJobInState(state: string, jobId: string): Promise<boolean> {
    return reads.isJobInState(this.ctx, state, jobId);
  }

  getJobData(jobId: string): Promise<JobJson | undefined> {
    return reads.getJobData(this.ctx, jobId);
  }

  getCounts(types: JobType[], delayedTimestamp?: number): Promise<number[]> {
    return reads.getCounts(this.ctx, types, delayedTimestamp);
  }

  getCountsPerPriority(priorities: number[]): Promise<number[]> {
    return reads.getCountsPerPriority(this.ctx, priorities);
  }

  getRanges(types: JobType[], start?: number, end?: number, asc?: boolean): Promise<[string][]> {
    return reads.getRanges(this.ctx, types, start, end, asc);
  }

  getJobLogs(jobId: string, start: number, end: number, asc: boolean): Promise<{ logs: string[]; count: number }> {
    return reads.getJobLogs(this.ctx, jobId, start, end, asc);
  }

  async paginate(
    key: string,
    opts: { start: number; end: number; fetchJobs?: boolean },
  ): Promise<{
    cursor: string;
    items: { id: string; v?: unknown; err?: string }[];
    total: number;
    jobs?: JobJson[];
  }> {
    return (await flowReads.paginateDependencies(this.ctx, key, opts)) ?? reads.paginate(this.ctx, key, opts);
  }

  getMetrics(type: 'completed' | 'failed', start?: number, end?: number): Promise<[string[], string[], number]> {
    return reads.getMetrics(this.ctx, type, start, end);
  }

  getClientList(): Promise<string[]> {
    return reads.getClientList(this.ctx);
  }

  isMaxed(): Promise<boolean> {
    return reads.isMaxed(this.ctx);
  }

  getDependencyCounts(jobId: string, types: string[]): Promise<number[]> {
    return flowReads.getDependencyCounts(this.ctx, jobId, types);
  }

  getDependencies(jobId: string, opts: DependenciesOpts): ReturnType<IQueueBackend['getDependencies']> {
    return flowReads.getDependencies(this.ctx, jobId, opts);
  }

  getProcessedChildrenValues(jobId: string): Promise<Record<string, string>> {
    return flowReads.getProcessedChildrenValues(this.ctx, jobId);
  }

  getIgnoredChildrenFailures(jobId: string): Promise<Record<string, string>> {
    return flowReads.getIgnoredChildrenFailures(this.ctx, jobId);
  }

  getDeduplicationJobId(deduplicationId: string): Promise<string | null> {
    return reads.getDeduplicationJobId(this.ctx, deduplicationId);
  }
}
