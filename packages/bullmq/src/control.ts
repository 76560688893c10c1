/** Queue and job control: pause, drain, clean, obliterate, promote, remove, retry, edits, logs. */
import type { FinishedStatus, RetryOptions } from 'bullmq';
import type { AnyJob } from './attempts.js';
import type { BackendContext } from './context.js';
import { NotSupportedError } from './errors.js';

const todo = (op: string): never => {
  throw new NotSupportedError(op);
};

export async function pause(_ctx: BackendContext, _pause: boolean): Promise<void> {
  return todo('pause');
}
export async function drain(_ctx: BackendContext, _delayed: boolean): Promise<void> {
  return todo('drain');
}
export async function cleanJobsByState(
  _ctx: BackendContext,
  _state: string,
  _ts: number,
  _limit?: number,
): Promise<string[]> {
  return todo('clean');
}
export async function obliterate(_ctx: BackendContext, _opts: { force: boolean; count: number }): Promise<number> {
  return todo('obliterate');
}
export async function removeOrphanedJobs(_ctx: BackendContext, _count?: number, _limit?: number): Promise<number> {
  return todo('removeOrphanedJobs');
}
export async function promote(_ctx: BackendContext, _jobId: string): Promise<void> {
  return todo('promote');
}
export async function promoteJobs(_ctx: BackendContext, _count?: number): Promise<number> {
  return todo('promoteJobs');
}
export async function remove(_ctx: BackendContext, _jobId: string, _removeChildren: boolean): Promise<number> {
  return todo('remove');
}
export async function removeUnprocessedChildren(_ctx: BackendContext, _jobId: string): Promise<void> {
  return todo('removeUnprocessedChildren');
}
export async function removeChildDependency(
  _ctx: BackendContext,
  _jobId: string,
  _parentKey: string,
): Promise<boolean> {
  return todo('removeChildDependency');
}
export async function retryFinishedJob(
  _ctx: BackendContext,
  _job: AnyJob,
  _state: 'failed' | 'completed',
  _opts?: RetryOptions,
): Promise<void> {
  return todo('retryFinishedJob');
}
export async function retryFinishedJobs(
  _ctx: BackendContext,
  _state?: FinishedStatus,
  _count?: number,
  _ts?: number,
): Promise<number> {
  return todo('retryJobs');
}
export async function changeDelay(_ctx: BackendContext, _jobId: string, _delay: number): Promise<void> {
  return todo('changeDelay');
}
export async function changePriority(
  _ctx: BackendContext,
  _jobId: string,
  _p?: number,
  _lifo?: boolean,
): Promise<void> {
  return todo('changePriority');
}
export async function updateData(_ctx: BackendContext, _job: AnyJob, _data: unknown): Promise<void> {
  return todo('updateData');
}
export async function addLog(_ctx: BackendContext, _jobId: string, _row: string, _keep?: number): Promise<number> {
  return todo('addLog');
}
export async function clearLogs(_ctx: BackendContext, _jobId: string, _keep?: number): Promise<void> {
  return todo('clearLogs');
}
