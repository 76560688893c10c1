/**
 * BullMQ's job schedulers over zkq's (`@zkq/core` schedulers): BullMQ's
 * JobScheduler computes times and options; the store adds each iteration
 * exactly once (see there). Hashes are returned in BullMQ's Redis shape,
 * which its JobScheduler parses.
 */
import { SchedulerCollisionError, SchedulerSlotsBusyError, type JobsOptions as ZkqJobsOptions } from '@zkq/core';
import {
  advanceScheduler,
  iterationId,
  listSchedulers,
  readScheduler,
  removeScheduler,
  type SchedulerRecord,
  upsertScheduler,
} from '@zkq/core/internal';
import { ErrorCode, type JobsOptions, type RepeatableOptions } from 'bullmq';
import type { BackendContext } from './context.js';

/** BullMQ's iteration options, pointed at the iteration the store chose. */
function iterationOpts(id: string, delayedJobOpts: JobsOptions) {
  return (next: number): ZkqJobsOptions => {
    const base = delayedJobOpts as JobsOptions & { prevMillis?: number };
    return { ...base, jobId: iterationId(id, next), prevMillis: next } as unknown as ZkqJobsOptions;
  };
}

export async function addJobScheduler(
  ctx: BackendContext,
  id: string,
  nextMillis: number,
  templateData: string,
  templateOpts: JobsOptions,
  opts: RepeatableOptions,
  delayedJobOpts: JobsOptions,
): Promise<[string, number]> {
  const store = await ctx.store();
  const make = iterationOpts(id, delayedJobOpts);
  try {
    const { jobId, delay } = await upsertScheduler(store, {
      id,
      next: nextMillis,
      now: Date.now(),
      spec: {
        name: opts.name,
        ...(opts.every !== undefined ? { every: Number(opts.every) } : {}),
        ...(opts.pattern ? { pattern: opts.pattern } : {}),
        ...(opts.tz ? { tz: opts.tz } : {}),
        ...(opts.startDate !== undefined ? { startDate: Number(opts.startDate) } : {}),
        ...(opts.endDate !== undefined ? { endDate: Number(opts.endDate) } : {}),
        ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
        ...(opts.offset !== undefined && opts.offset !== null ? { offset: opts.offset } : {}),
      },
      data: templateData,
      opts: templateOpts as unknown as ZkqJobsOptions,
      iteration: make,
    });
    return [jobId, delay];
  } catch (err) {
    throw schedulerError(err);
  }
}

export async function updateJobSchedulerNextMillis(
  ctx: BackendContext,
  id: string,
  nextMillis: number,
  delayedJobOpts: JobsOptions,
  producerId: string | undefined,
): Promise<string | null> {
  const store = await ctx.store();
  return advanceScheduler(store, {
    id,
    next: nextMillis,
    now: Date.now(),
    producerId,
    iteration: iterationOpts(id, delayedJobOpts),
  });
}

/** 0 when removed, 1 when there was no such scheduler (BullMQ's codes). */
export async function removeJobScheduler(ctx: BackendContext, id: string): Promise<number> {
  return (await removeScheduler(await ctx.store(), id)) ? 0 : 1;
}

export async function getJobScheduler(ctx: BackendContext, id: string): Promise<[string[] | null, string | null]> {
  const found = await readScheduler(await ctx.store(), id);
  if (!found) return [null, null];
  return [Object.entries(toHash(found.record)).flat(), String(found.record.next)];
}

export async function getJobSchedulerData(ctx: BackendContext, id: string): Promise<Record<string, string>> {
  const found = await readScheduler(await ctx.store(), id);
  return found ? toHash(found.record) : {};
}

export async function isJobScheduler(ctx: BackendContext, id: string): Promise<boolean> {
  return (await readScheduler(await ctx.store(), id)) !== undefined;
}

/** `[id, next, id, next, ...]` of the schedulers from `start` to `end` (inclusive, -1 = last). */
export async function getJobSchedulersRange(
  ctx: BackendContext,
  start: number,
  end: number,
  asc: boolean,
): Promise<string[]> {
  const all = await listSchedulers(await ctx.store());
  if (!asc) all.reverse();
  const last = end < 0 ? all.length + end : end;
  return all.slice(Math.max(start, 0), last + 1).flatMap((s) => [s.id, String(s.next)]);
}

export async function getJobSchedulersCount(ctx: BackendContext): Promise<number> {
  return (await listSchedulers(await ctx.store())).length;
}

/** A scheduler as BullMQ's Redis hash: string values, absent fields left out. */
function toHash(s: SchedulerRecord): Record<string, string> {
  const hash: Record<string, string> = { name: s.name, ic: String(s.ic), data: s.data, opts: JSON.stringify(s.opts) };
  for (const key of ['every', 'pattern', 'tz', 'startDate', 'endDate', 'limit', 'offset'] as const) {
    const v = s[key];
    if (v !== undefined && v !== null) hash[key] = String(v);
  }
  return hash;
}

/** The store's scheduler errors, with BullMQ's codes and messages. */
function schedulerError(err: unknown): unknown {
  if (err instanceof SchedulerCollisionError) {
    return Object.assign(new Error('Cannot create job scheduler iteration - job ID already exists. addJobScheduler'), {
      code: ErrorCode.SchedulerJobIdCollision,
    });
  }
  if (err instanceof SchedulerSlotsBusyError) {
    return Object.assign(
      new Error(
        'Cannot create job scheduler iteration - current and next time slots already have jobs. addJobScheduler',
      ),
      { code: ErrorCode.SchedulerJobSlotsBusy },
    );
  }
  return err;
}
