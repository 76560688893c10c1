/** Reads: job state, data, counts, ranges, logs, metrics. */

import { jobState } from '@zkq/core';
import type { DependenciesOpts, JobJson, JobState, JobType } from 'bullmq';
import type { BackendContext } from './context.js';
import { NotSupportedError } from './errors.js';
import { toJobJson } from './json.js';

const todo = (op: string): never => {
  throw new NotSupportedError(op);
};

/** The state of a job: a live claim means active, else its record says (BullMQ's `wait` is `waiting`). */
export async function getState(ctx: BackendContext, jobId: string): Promise<JobState | 'unknown'> {
  return jobState(await ctx.store(), jobId);
}
export async function isFinished(
  _ctx: BackendContext,
  _jobId: string,
  _rv?: boolean,
): Promise<number | [number, string]> {
  return todo('isFinished');
}
export async function isJobInState(_ctx: BackendContext, _state: string, _jobId: string): Promise<boolean> {
  return todo('isJobInState');
}
/** A job as BullMQ's JobJson; an active job's progress is its claim's (the latest reported). */
export async function getJobData(ctx: BackendContext, jobId: string): Promise<JobJson | undefined> {
  const store = await ctx.store();
  const [stored, claim] = await Promise.all([store.getJob(jobId), store.getClaim(jobId)]);
  if (!stored) return undefined;
  return toJobJson(stored.record, claim?.progress);
}
export async function getCounts(_ctx: BackendContext, _types: JobType[], _delayedTs?: number): Promise<number[]> {
  return todo('getCounts');
}
export async function getCountsPerPriority(_ctx: BackendContext, _priorities: number[]): Promise<number[]> {
  return todo('getCountsPerPriority');
}
export async function getRanges(
  _ctx: BackendContext,
  _types: JobType[],
  _start?: number,
  _end?: number,
  _asc?: boolean,
): Promise<[string][]> {
  return todo('getRanges');
}
export async function getJobLogs(
  _ctx: BackendContext,
  _jobId: string,
  _start: number,
  _end: number,
  _asc: boolean,
): Promise<{ logs: string[]; count: number }> {
  return todo('getJobLogs');
}
export async function paginate(
  _ctx: BackendContext,
  _key: string,
  _opts: { start: number; end: number; fetchJobs?: boolean },
): Promise<{ cursor: string; items: { id: string; v?: unknown; err?: string }[]; total: number; jobs?: JobJson[] }> {
  return todo('paginate');
}
export async function getMetrics(
  _ctx: BackendContext,
  _type: 'completed' | 'failed',
  _start?: number,
  _end?: number,
): Promise<[string[], string[], number]> {
  return todo('getMetrics');
}
export async function getClientList(_ctx: BackendContext): Promise<string[]> {
  return todo('getClientList');
}
export async function isMaxed(_ctx: BackendContext): Promise<boolean> {
  return todo('isMaxed');
}
export async function getDependencyCounts(_ctx: BackendContext, _jobId: string, _types: string[]): Promise<number[]> {
  return todo('getDependencyCounts');
}
export async function getDependencies(
  _ctx: BackendContext,
  _jobId: string,
  _opts: DependenciesOpts,
): Promise<{
  nextFailedCursor?: number;
  failed?: string[];
  nextIgnoredCursor?: number;
  ignored?: Record<string, unknown>;
  nextProcessedCursor?: number;
  processed?: Record<string, unknown>;
  nextUnprocessedCursor?: number;
  unprocessed?: string[];
}> {
  return todo('getDependencies');
}
export async function getProcessedChildrenValues(
  _ctx: BackendContext,
  _jobId: string,
): Promise<Record<string, string>> {
  return todo('getProcessedChildrenValues');
}
export async function getIgnoredChildrenFailures(
  _ctx: BackendContext,
  _jobId: string,
): Promise<Record<string, string>> {
  return todo('getIgnoredChildrenFailures');
}
export async function getDeduplicationJobId(_ctx: BackendContext, _id: string): Promise<string | null> {
  return todo('getDeduplicationJobId');
}
