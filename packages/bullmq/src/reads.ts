/**
 * Reads: job state, data, counts, ranges, logs, metrics, workers.
 *
 * States and counts are BullMQ 6's on Redis (core's reads-counts.ts says
 * where each state lives): a paused queue's waiting jobs stay `waiting`, so
 * `getCounts(['paused'])` is 0, as on Redis (BullMQ's PostgreSQL backend,
 * and zkq's own Queue, report them as paused instead).
 *
 * Flows are not offered by this backend, so no job has children or
 * dependencies: their reads answer truthfully empty.
 */
import { NoNodeError } from '@zkq/core';
import {
  isMaxed as coreIsMaxed,
  countPerPriority,
  countStates,
  jobState,
  type QueueStore,
  rangeOfState,
  readJobLogs,
  getMetrics as readMetrics,
  redisRange,
} from '@zkq/core/internal';
import type { JobJson, JobState, JobType } from 'bullmq';
import type { BackendContext } from './context.js';
import { getDeduplicationJobId as keptJob } from './dedup.js';
import { toJobJson } from './json.js';

/** Nodes read at once when listing workers. */
const WORKER_READS_IN_FLIGHT = 32;

/** The state of a job: a live claim means active, else its record says (BullMQ's `wait` is `waiting`). */
export async function getState(ctx: BackendContext, jobId: string): Promise<JobState | 'unknown'> {
  return jobState(await ctx.store(), jobId);
}

/**
 * Whether the job finished: 1 completed, 2 failed, 0 not yet, -1 no such
 * job; with `rv`, paired with the return value (JSON) or failure reason.
 */
export async function isFinished(ctx: BackendContext, jobId: string, rv?: boolean): Promise<number | [number, string]> {
  const stored = await (await ctx.store()).getJob(jobId);
  const record = stored?.record;
  let answer: [number, string] | [number];
  if (!record) answer = [-1, `Missing key for job ${ctx.prefix}:${ctx.name}:${jobId}. isFinished`];
  else if (record.state === 'completed') answer = [1, JSON.stringify(record.returnvalue ?? null)];
  else if (record.state === 'failed') answer = [2, record.failedReason ?? ''];
  else answer = [0];
  return rv ? (answer as [number, string]) : answer[0];
}

/** Whether the job is in `state` (BullMQ's names; `waiting` is `wait`, `paused` is never, as on Redis). */
export async function isJobInState(ctx: BackendContext, state: string, jobId: string): Promise<boolean> {
  switch (state) {
    case 'wait':
    case 'waiting':
      return (await getState(ctx, jobId)) === 'waiting';
    case 'active':
    case 'prioritized':
    case 'completed':
    case 'failed':
    case 'delayed':
    case 'waiting-children':
      return (await getState(ctx, jobId)) === state;
    case 'paused':
      return false;
    default:
      throw new Error(`Unknown job state: ${state}`);
  }
}

/** A job as BullMQ's JobJson; an active job's progress is its claim's (the latest reported). */
export async function getJobData(ctx: BackendContext, jobId: string): Promise<JobJson | undefined> {
  const store = await ctx.store();
  const [stored, claim] = await Promise.all([store.getJob(jobId), store.getClaim(jobId)]);
  if (!stored) return undefined;
  return toJobJson(stored.record, ctx.prefix, claim?.progress);
}

/** Jobs per type, in order; `delayedTs` counts only delayed jobs due before it. */
export async function getCounts(ctx: BackendContext, types: JobType[], delayedTs?: number): Promise<number[]> {
  return countStates(await ctx.store(), types, delayedTs);
}

/** Waiting jobs per priority (0: jobs without one), paused or not. */
export async function getCountsPerPriority(ctx: BackendContext, priorities: number[]): Promise<number[]> {
  return countPerPriority(await ctx.store(), priorities);
}

/** Job ids per type, `start..end` by Redis's index rules, in the order BullMQ's Redis script gives them. */
export async function getRanges(
  ctx: BackendContext,
  types: JobType[],
  start = 0,
  end = 1,
  asc = false,
): Promise<[string][]> {
  const store = await ctx.store();
  const pages = await Promise.all(types.map((type) => rangeOfState(store, type, start, end, asc)));
  return pages as unknown as [string][]; // BullMQ's type; each entry is a list of ids
}

/** Log lines `start..end`, oldest first with `asc`, newest first without, and how many there are. */
export async function getJobLogs(
  ctx: BackendContext,
  jobId: string,
  start: number,
  end: number,
  asc: boolean,
): Promise<{ logs: string[]; count: number }> {
  const logs = (await readJobLogs(await ctx.store(), jobId))?.logs ?? [];
  return { logs: redisRange(asc ? logs : [...logs].reverse(), start, end), count: logs.length };
}

/**
 * BullMQ pages only a parent's children with this (flows.ts serves those
 * keys): any other key gives an empty page.
 */
export async function paginate(
  _ctx: BackendContext,
  _key: string,
  _opts: { start: number; end: number; fetchJobs?: boolean },
): Promise<{ cursor: string; items: { id: string; v?: unknown; err?: string }[]; total: number; jobs?: JobJson[] }> {
  return { cursor: '0', items: [], total: 0, jobs: [] };
}

/** The per-minute series of finished jobs, as `[[count, prevTS, prevCount], points, length]`. */
export async function getMetrics(
  ctx: BackendContext,
  type: 'completed' | 'failed',
  start = 0,
  end = -1,
): Promise<[string[], string[], number]> {
  const { meta, data, count } = await readMetrics(await ctx.store(), type, start, end);
  return [[String(meta.count), String(meta.prevTS), String(meta.prevCount)], data.map(String), count];
}

/**
 * BullMQ finds workers and QueueEvents in Redis's CLIENT LIST by connection
 * name. Here each live worker of the queue has an EPHEMERAL `workers/<id>`
 * node and each QueueEvents an `events/listeners/<id>` node (both end with
 * their owner's session); this lists them as CLIENT LIST lines named as
 * BullMQ's matchers expect: `<prefix>:<queue>:w:<name>` for a worker, its
 * name being the node's `name` field, else its id (a zkq Worker's id is its
 * `name` option), and `<prefix>:<queue>:qe` for a QueueEvents.
 */
export async function getClientList(ctx: BackendContext): Promise<string[]> {
  const store = await ctx.store();
  const { layout } = store;
  const base = `${ctx.prefix}:${ctx.name}`; // the backend's clientName()
  const [workers, listeners] = await Promise.all([
    store.children(layout.workersDir),
    store.children(layout.eventListeners),
  ]);
  const lines: string[] = [];
  for (let i = 0; i < workers.length; i += WORKER_READS_IN_FLIGHT) {
    const batch = workers.slice(i, i + WORKER_READS_IN_FLIGHT);
    const infos = await Promise.all(batch.map((id) => workerInfo(store, id)));
    batch.forEach((id, j) => {
      const info = infos[j];
      if (info === undefined) return; // gone since listed
      const name = typeof info.name === 'string' && info.name ? info.name : id;
      lines.push(
        clientLine({ id, name: `${base}:w:${name}`, addr: info.host, pid: info.pid, concurrency: info.concurrency }),
      );
    });
  }
  for (const id of listeners) lines.push(clientLine({ id, name: `${base}:qe` }));
  return [lines.join('\n')];
}

/** What a worker's membership node says (zkq's Worker writes id, host, pid, concurrency, startedAt). */
async function workerInfo(store: QueueStore, id: string): Promise<Record<string, unknown> | undefined> {
  try {
    const { data } = await store.session.getData(store.layout.worker(id));
    const parsed = JSON.parse(data.toString() || '{}') as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    if (err instanceof SyntaxError) return {};
    throw err;
  }
}

/** One CLIENT LIST line: `key=value` pairs, values without spaces (BullMQ's parser splits on them). */
function clientLine(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${k}=${String(v).replace(/\s+/g, '_')}`)
    .join(' ');
}

/** Whether the queue's global concurrency holds new jobs back (core's isMaxed). */
export async function isMaxed(ctx: BackendContext): Promise<boolean> {
  return coreIsMaxed(await ctx.store());
}

/** The job a live deduplication key keeps, or null (dedup.ts). */
export async function getDeduplicationJobId(ctx: BackendContext, id: string): Promise<string | null> {
  return keptJob(ctx, id);
}
