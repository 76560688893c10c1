/**
 * Scheduler advance: a scheduler is the node `schedulers/s-<id>`, holding its
 * repeat options, its job template and the time `next` of its current
 * iteration, the job `repeat:<scheduler>:<next>`.
 *
 * The next iteration is added in ONE transaction that rewrites the scheduler
 * node at the version read (two processes cannot both advance it from the
 * same iteration) and creates the iteration's job under its deterministic id
 * (a tick cannot be added twice). Only the running iteration's job
 * (`producerId`) advances its scheduler. A write that met another process's
 * is planned again from fresh reads (the executor's runPlanned). Upserts and removals write the same
 * node at the version read (scheduler-upsert.ts); this file holds the record,
 * its read and the pieces of the transaction they share.
 */
import { BadVersionError, NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../event-record.js';
import { laneOf } from '../layout.js';
import { encodeRecord, type JobRecord, newRecord } from '../record.js';
import type { JobsOptions } from '../types.js';
import { enqueueOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp, TxUnit } from './executor.js';
import { publishEvents } from './publish.js';

/** What an upsert stores besides the template. */
export interface SchedulerSpec {
  /** Name of the jobs it adds. */
  name: string;
  every?: number;
  pattern?: string;
  tz?: string;
  startDate?: number;
  endDate?: number;
  limit?: number;
  offset?: number | null;
}

/** A scheduler as stored: its spec, its template and its current iteration. */
export interface SchedulerRecord extends Omit<SchedulerSpec, 'offset'> {
  id: string;
  /** Time of the current iteration, ms since the epoch. */
  next: number;
  /** Iterations added so far. */
  ic: number;
  offset?: number;
  /** The template's data, as JSON text. */
  data: string;
  /** The template's job options. */
  opts: JobsOptions;
}

/** The iteration job's options for `next` (built by the caller, BullMQ's JobScheduler). */
export type IterationOpts = (next: number) => JobsOptions;

/** The job id of a scheduler's iteration at `millis`. */
export function iterationId(schedulerId: string, millis: number): string {
  return `repeat:${schedulerId}:${millis}`;
}

export async function readScheduler(
  store: ProtocolContext,
  id: string,
): Promise<{ record: SchedulerRecord; version: number } | undefined> {
  try {
    const { data, stat } = await store.session.getData(store.layout.scheduler(id));
    return { record: JSON.parse(data.toString()) as SchedulerRecord, version: stat.version };
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

/**
 * The next time of an `every` scheduler: from its previous iteration when it
 * has one (catching up past missed slots, keeping the offset), else from now
 * or its start date. Returns the time and the offset within the interval.
 */
export function everyNext(
  prev: number | undefined,
  every: number,
  now: number,
  offset: number | undefined,
  startDate: number | undefined,
): { next: number; offset: number } {
  let next: number;
  const aligned = () => {
    const slot = Math.floor(now / every) * every + (offset ?? 0);
    return slot <= now ? slot + every : slot;
  };
  if (prev === undefined) {
    if (startDate !== undefined) next = Math.max(startDate, now);
    else if (offset) next = aligned();
    else next = now;
  } else {
    next = prev + every;
    if (next < now) next = aligned();
  }
  const off = offset ? offset : next - Math.floor(next / every) * every;
  return { next: Math.floor(next), offset: Math.floor(off) };
}

/**
 * Adds the iteration after `producerId`'s, when `producerId` is the
 * scheduler's current iteration. Resolves with the new job id, or null when
 * there is nothing to add: the scheduler is gone, another process advanced
 * it already, or the next iteration exists (event `duplicated`).
 */
export async function advanceScheduler(
  store: ProtocolContext,
  a: {
    id: string;
    next: number;
    now: number;
    producerId: string | undefined;
    iteration: IterationOpts;
    /**
     * ZooKeeper's time as the caller knows it (a heal's, at the earliest): the
     * next tick is timed from no earlier, so a heal long after the claim adds
     * no tick already past.
     */
    serverNow?: number;
  },
): Promise<string | null> {
  await store.init();
  let jobId = '';
  return store.executor.runPlanned<string | null>(
    async () => {
      const current = await readScheduler(store, a.id);
      if (!current) return { answer: null };
      if (a.producerId !== iterationId(a.id, current.record.next)) return { answer: null };
      const now = Math.max(await serverTime(store, a.producerId, a.now), a.serverNow ?? Number.NEGATIVE_INFINITY);
      const planned = planAdvance(store, current, a, now);
      jobId = planned.jobId;
      return { answer: jobId, unit: planned.unit };
    },
    {
      onFailure: async (error, op) => {
        if (error instanceof NodeExistsError && op?.path === store.layout.job(jobId)) {
          await publishEvents(store, [{ event: 'duplicated', jobId, ts: a.now }]);
          return { answer: null };
        }
        return schedulerVerdict(error);
      },
    },
  );
}

/** The advance from the scheduler as read at `now`: its next iteration's id and transaction unit. */
function planAdvance(
  store: ProtocolContext,
  current: { record: SchedulerRecord; version: number },
  a: { id: string; next: number; iteration: IterationOpts },
  now: number,
): { jobId: string; unit: TxUnit } {
  const s = current.record;
  let next = a.next;
  let offset = s.offset;
  if (s.every) ({ next, offset } = everyNext(s.next, s.every, now, s.offset, s.startDate));
  const jobId = iterationId(a.id, next);
  const updated: SchedulerRecord = { ...s, next, ic: s.ic + 1, ...(offset !== undefined ? { offset } : {}) };
  const delay = Math.max(next - now, 0);
  const unit = iterationUnit(store, {
    scheduler: schedulerOp(store, a.id, updated, current.version),
    record: iterationRecord(jobId, updated, a.iteration(next), delay, now),
    removal: [],
    events: [],
  });
  return { jobId, unit };
}

/**
 * ZooKeeper's time of the producer's claim, just before it asks for the next
 * iteration: the same clock whichever process advances the scheduler, so a
 * process with a skewed clock neither skips ticks nor adds them early. A
 * claim writes no record (it creates the claim node), so the claim node's
 * `ctime` tells it: the record's `mtime` is its promotion's or its add's,
 * which may be long before the claim (an iteration claimed again once the
 * session of a claimer that died before advancing expired), and an advance
 * from it added a tick already past, late from the start, where it should
 * catch up to the slot after the claim. The record's `mtime` when there is
 * no claim (a heal after the producer finished: its finish's time). The
 * caller's clock when neither is readable, and on a session with
 * `clock: 'process'`.
 */
async function serverTime(store: ProtocolContext, producerId: string, fallback: number): Promise<number> {
  if (store.session.clock === 'process') return fallback; // one process, one clock: the caller's
  const { layout, session } = store;
  const stats = await Promise.all(
    [layout.job(producerId), layout.claim(producerId)].map((path) => session.exists(path).catch(() => null)),
  );
  const [record, claim] = stats;
  const times = [record?.mtime, claim?.ctime].filter((t): t is number => typeof t === 'number');
  return times.length > 0 ? Math.max(...times) : fallback;
}

/** The scheduler node's write: created, or rewritten at the version read (it fences). */
export function schedulerOp(
  store: ProtocolContext,
  id: string,
  record: SchedulerRecord,
  version: number | undefined,
): ProtocolOp {
  const data = Buffer.from(JSON.stringify(record));
  const path = store.layout.scheduler(id);
  return version === undefined ? { op: 'create', path, data } : { op: 'setData', path, data, version };
}

/** The record of the iteration `id` of scheduler `s`, waiting, or delayed by `delay` ms from `now`. */
export function iterationRecord(
  id: string,
  s: SchedulerRecord,
  opts: JobsOptions,
  delay: number,
  now: number,
): JobRecord {
  const jobOpts = { ...opts, delay };
  const record = newRecord(id, s.name, JSON.parse(s.data || '{}'), jobOpts, delay > 0 ? 'delayed' : 'waiting', now);
  record.timestamp = now;
  if (delay > 0) record.due = now + delay;
  return record;
}

/** The iteration's share of a transaction: the scheduler write first (it fences), then removal and enqueue. */
export function iterationUnit(
  store: ProtocolContext,
  p: { scheduler: ProtocolOp; record: JobRecord; removal: ProtocolOp[]; events: QueueEventRecord[] },
): TxUnit {
  const { record } = p;
  const lane = laneOf(record.opts.priority ?? 0, record.opts.lifo ?? false);
  const data = encodeRecord({ ...record, lane });
  const delayed = record.state === 'delayed';
  return {
    build: async () => ({
      ops: [
        p.scheduler,
        ...p.removal,
        ...enqueueOps(
          store.layout,
          record.id,
          data,
          await store.destination(
            delayed ? { kind: 'delayed', due: record.due ?? Date.now() } : { kind: 'ready', lane },
          ),
        ),
      ],
      events: [
        ...p.events,
        { event: 'added', jobId: record.id, name: record.name, ts: record.timestamp },
        delayed
          ? { event: 'delayed', jobId: record.id, delay: record.due, ts: record.timestamp }
          : { event: 'waiting', jobId: record.id, ts: record.timestamp },
      ],
      wakes: !delayed,
    }),
  };
}

/**
 * A failed write of a scheduler: planned again (the executor's retry policy)
 * when another process changed the scheduler or the jobs read meanwhile.
 */
export function schedulerVerdict(err: unknown): 'again' | 'fail' {
  return err instanceof BadVersionError || err instanceof NodeExistsError || err instanceof NoNodeError
    ? 'again'
    : 'fail';
}
