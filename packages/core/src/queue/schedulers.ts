/**
 * Job schedulers: a node per scheduler, `schedulers/s-<id>`, holding its
 * repeat options, its job template and the time `next` of its current
 * iteration. An iteration is a job with the id `repeat:<scheduler>:<next>`.
 *
 * Exactly one job per tick, whatever the number of processes and their
 * clocks: the next iteration is added in ONE transaction that rewrites the
 * scheduler node at the version read (so two processes cannot both advance
 * it from the same iteration) and creates the iteration's job under its
 * deterministic id (so a tick cannot be added twice). Only the running
 * iteration's job may advance its scheduler (`producerId`): a worker that
 * claims it again after a crash advances it once, and a stale one not at all.
 * A scheduler whose advance failed for good (or whose iteration was removed)
 * is advanced by whoever promotes delayed jobs next checks the schedulers
 * (healSchedulers), by the same fenced transaction.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CronExpressionParser } from 'cron-parser';
import { BadVersionError, NodeExistsError, NoNodeError } from '../zk/errors.js';
import { findPointer } from './control.js';
import { JobStateError } from './errors.js';
import type { QueueEventRecord } from './events.js';
import { laneOf, validateCustomJobId } from './layout.js';
import { enqueueOps, removeOps } from './protocol/builders.js';
import type { ProtocolOp, TxUnit } from './protocol/executor.js';
import { decodeRecord, encodeRecord, type JobRecord, newRecord } from './record.js';
import type { QueueStore } from './store.js';
import type { JobsOptions } from './types.js';

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

/**
 * Advances the scheduler of `record`, an iteration just claimed by zkq's own
 * Worker (BullMQ's Worker does this itself, through its JobScheduler).
 * Resolves with the new job id, or null when there is none to add or another
 * process added it.
 */
export async function advanceAfterClaim(store: QueueStore, record: JobRecord): Promise<string | null> {
  const id = (record.opts as { repeatJobKey?: string }).repeatJobKey;
  if (!id) return null;
  const current = await readScheduler(store, id);
  if (!current) return null;
  return advanceFrom(store, current.record, record.id, Date.now());
}

/**
 * Adds the iteration after `producerId`'s: the next time by the scheduler's
 * `every` or cron `pattern` (in `tz`), none past its `limit` or `endDate`,
 * and the iteration's options in BullMQ's shape, so either front-end's
 * workers can run the next one.
 */
function advanceFrom(store: QueueStore, s: SchedulerRecord, producerId: string, now: number): Promise<string | null> {
  const id = s.id;
  if (s.limit !== undefined && s.ic >= s.limit) return Promise.resolve(null);
  if (s.endDate !== undefined && now > s.endDate) return Promise.resolve(null);
  let next = s.next;
  if (!s.every) {
    if (!s.pattern) return Promise.resolve(null);
    const from = new Date(Math.max(now, s.next, s.startDate ?? 0));
    next = CronExpressionParser.parse(s.pattern, { currentDate: from, ...(s.tz ? { tz: s.tz } : {}) })
      .next()
      .getTime();
  }
  return advanceScheduler(store, {
    id,
    next,
    now,
    producerId,
    iteration: (at) =>
      ({
        ...s.opts,
        jobId: iterationId(id, at),
        repeatJobKey: id,
        prevMillis: at,
        repeat: {
          ...(s.every ? { every: s.every } : {}),
          ...(s.pattern ? { pattern: s.pattern } : {}),
          ...(s.tz ? { tz: s.tz } : {}),
          ...(s.limit !== undefined ? { limit: s.limit } : {}),
          ...(s.startDate !== undefined ? { startDate: s.startDate } : {}),
          ...(s.endDate !== undefined ? { endDate: s.endDate } : {}),
          ...(s.offset !== undefined ? { offset: s.offset } : {}),
          count: s.ic + 1,
        },
      }) as JobsOptions,
  });
}

/** Schedulers read at once while healing. */
const HEAL_READ = 50;

/**
 * Gives every scheduler left without its next iteration that iteration: one
 * whose current iteration (the job at its `next`) was started (claimed at
 * least once; a running one claimed CLAIMER_ADVANCES_MS ago at least) or is
 * gone, when the advance after its claim failed (retries exhausted, an error
 * that was no race) or the job was removed. Due on
 * ZooKeeper's clock `now`: a scheduler whose current iteration is not due
 * yet is not looked at further. Any number of processes may heal at once:
 * the advance is fenced by the scheduler node's version and the iteration's
 * id, so a scheduler gets its next iteration once. Resolves with the ids of
 * the iterations added.
 */
export async function healSchedulers(store: QueueStore, now: number): Promise<string[]> {
  const names = await store.children(store.layout.schedulersDir);
  const added: string[] = [];
  let failure: unknown;
  for (let i = 0; i < names.length; i += HEAL_READ) {
    const read = await Promise.all(
      names
        .slice(i, i + HEAL_READ)
        .map((n) => readScheduler(store, decodeURIComponent(n.slice(2))).catch(() => undefined)),
    );
    const due = read.flatMap((r) => (r && r.record.next <= now ? [r.record] : []));
    const orphans = await Promise.all(
      due.map(async (s) => ((await lacksNextIteration(store, s, now)) ? s : undefined)),
    );
    for (const s of orphans) {
      if (!s) continue;
      // one scheduler that cannot advance (its store refuses the iteration) holds no other back
      const jobId = await advanceFrom(store, s, iterationId(s.id, s.next), now).catch((err) => {
        failure ??= err;
        return null;
      });
      if (jobId) added.push(jobId);
    }
  }
  if (failure !== undefined) throw failure;
  return added;
}

/**
 * How long after its claim (on ZooKeeper's clock: the record's mtime against
 * ZooKeeper's time now) a running iteration is left to its claimer, which
 * advances the scheduler as it starts, ms.
 */
const CLAIMER_ADVANCES_MS = 5000;

/**
 * The scheduler has no next iteration: its current one (the job at its
 * `next`) was started and is not just being started, or is gone.
 */
async function lacksNextIteration(store: QueueStore, s: SchedulerRecord, now: number): Promise<boolean> {
  const path = store.layout.job(iterationId(s.id, s.next));
  try {
    const { data, stat } = await store.session.getData(path);
    const record = decodeRecord(data, path);
    if (record.attemptsStarted === 0) return false; // not started: it is the next iteration
    // on the process's clock (tests), the claim's time as its claimer wrote it: an mtime is ZooKeeper's
    const claimed = store.session.clock === 'process' ? (record.processedOn ?? stat.mtime) : stat.mtime;
    return record.state !== 'active' || now - claimed >= CLAIMER_ADVANCES_MS;
  } catch (err) {
    return err instanceof NoNodeError; // gone; anything else (unreadable) is not ours to judge
  }
}

/** Slots an `every` scheduler walks past jobs that already hold them. */
const MAX_SLOT_SCANS = 32;
/** Times an operation is planned again after another process changed the scheduler. */
const ATTEMPTS = 32;
/** Longest pause before planning again, ms: spread out, writers that collided stop colliding. */
const BACKOFF_MAX_MS = 200;

export class SchedulerCollisionError extends JobStateError {
  constructor(jobId: string) {
    super(jobId, 'cannot add the scheduler iteration: a job with its id exists already');
  }
}

export class SchedulerSlotsBusyError extends JobStateError {
  constructor(jobId: string) {
    super(jobId, `cannot add the scheduler iteration: the next ${MAX_SLOT_SCANS} time slots hold jobs already`);
  }
}

export async function readScheduler(
  store: QueueStore,
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

/** Every scheduler, by the time of its current iteration. */
export async function listSchedulers(store: QueueStore): Promise<SchedulerRecord[]> {
  const names = await store.children(store.layout.schedulersDir);
  const read = await Promise.all(names.map((n) => readScheduler(store, decodeURIComponent(n.slice(2)))));
  return read.flatMap((r) => (r ? [r.record] : [])).sort((a, b) => a.next - b.next);
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
 * Creates or replaces scheduler `id` and adds its next iteration. A previous
 * iteration that has not started is replaced (an `every` scheduler keeps its
 * time). Resolves with the iteration's job id and delay.
 */
export async function upsertScheduler(
  store: QueueStore,
  u: {
    id: string;
    next: number;
    now: number;
    spec: SchedulerSpec;
    data: string;
    opts: JobsOptions;
    iteration: IterationOpts;
  },
): Promise<{ jobId: string; delay: number }> {
  // every iteration's id must be a valid job id (13-digit millis until the year 2286)
  validateCustomJobId(iterationId(u.id, 1e12));
  await store.init();
  await store.ensureDir(store.layout.schedulersDir);
  for (let attempt = 1; ; attempt++) {
    // ticks are timed on ZooKeeper's clock, as the leader promotes them (a skewed producer's
    // upsert neither starts the schedule early nor shifts its grid)
    const now = await store.serverNow().catch(() => u.now);
    const prev = await readScheduler(store, u.id);
    const every = u.spec.every;
    let next = u.next;
    const everyChanged = prev !== undefined && prev.record.every !== every;
    // without an offset of its own, an upsert keeps the grid the scheduler is on
    let offset = u.spec.offset ?? (everyChanged ? undefined : prev?.record.offset);
    if (every) {
      ({ next, offset } = everyNext(
        everyChanged ? undefined : prev?.record.next,
        every,
        now,
        offset,
        u.spec.startDate,
      ));
    }
    const ops: ProtocolOp[] = [];
    const events: QueueEventRecord[] = [];
    let replaced: string | undefined;
    if (prev) {
      const prevId = iterationId(u.id, prev.record.next);
      const old = await store.getJob(prevId);
      if (old && (old.record.state === 'delayed' || old.record.state === 'waiting')) {
        const pointer = await findPointer(store, old.record);
        ops.push(...removeOps(store.layout, { id: prevId, version: old.version, pointer }));
        events.push({ event: 'removed', jobId: prevId, prev: old.record.state, ts: now });
        replaced = prevId;
        if (every && !everyChanged) next = prev.record.next;
      }
    }
    let jobId = iterationId(u.id, next);
    if (jobId !== replaced && (await store.getJob(jobId))) {
      if (!every) throw new SchedulerCollisionError(jobId);
      let scans = 0;
      do {
        next += every;
        jobId = iterationId(u.id, next);
      } while (++scans < MAX_SLOT_SCANS && (await store.getJob(jobId)));
      if (await store.getJob(jobId)) throw new SchedulerSlotsBusyError(jobId);
    }
    const record: SchedulerRecord = {
      id: u.id,
      name: u.spec.name,
      next,
      ic: (prev?.record.ic ?? 0) + 1,
      data: u.data,
      opts: u.opts,
      ...definedOf({ ...u.spec, offset }),
    };
    const delay = Math.max(next - now, 0);
    const unit = await iterationUnit(store, {
      scheduler: schedulerOp(store, u.id, record, prev?.version),
      record: iterationRecord(jobId, record, u.iteration(next), delay, now),
      removal: ops,
      events,
    });
    const [result] = await store.executor.run([unit]);
    if (result?.ok) return { jobId, delay };
    if (attempt >= ATTEMPTS || !isRace(result?.error)) throw result?.error;
    await backoff(attempt);
  }
}

/**
 * Adds the iteration after `producerId`'s, when `producerId` is the
 * scheduler's current iteration. Resolves with the new job id, or null when
 * there is nothing to add: the scheduler is gone, another process advanced
 * it already, or the next iteration exists (event `duplicated`).
 */
export async function advanceScheduler(
  store: QueueStore,
  a: { id: string; next: number; now: number; producerId: string | undefined; iteration: IterationOpts },
): Promise<string | null> {
  await store.init();
  for (let attempt = 1; ; attempt++) {
    const current = await readScheduler(store, a.id);
    if (!current) return null;
    const s = current.record;
    if (a.producerId !== iterationId(a.id, s.next)) return null;
    const now = await serverTime(store, a.producerId, a.now);
    let next = a.next;
    let offset = s.offset;
    if (s.every) ({ next, offset } = everyNext(s.next, s.every, now, s.offset, s.startDate));
    const jobId = iterationId(a.id, next);
    const updated: SchedulerRecord = { ...s, next, ic: s.ic + 1, ...(offset !== undefined ? { offset } : {}) };
    const delay = Math.max(next - now, 0);
    const unit = await iterationUnit(store, {
      scheduler: schedulerOp(store, a.id, updated, current.version),
      record: iterationRecord(jobId, updated, a.iteration(next), delay, now),
      removal: [],
      events: [],
    });
    const [result] = await store.executor.run([unit]);
    if (result?.ok) return jobId;
    const error = result?.error;
    if (result && !result.ok && error instanceof NodeExistsError && result.op?.path === store.layout.job(jobId)) {
      await store.publish([{ event: 'duplicated', jobId, ts: a.now }]);
      return null;
    }
    if (attempt >= ATTEMPTS || !isRace(error)) throw error;
    await backoff(attempt);
  }
}

/**
 * Removes scheduler `id` and its next iteration when that has not started.
 * Resolves false when there was no such scheduler.
 */
export async function removeScheduler(store: QueueStore, id: string): Promise<boolean> {
  await store.init();
  for (let attempt = 1; ; attempt++) {
    const current = await readScheduler(store, id);
    if (!current) return false;
    const ops: ProtocolOp[] = [{ op: 'delete', path: store.layout.scheduler(id), version: current.version }];
    const events: QueueEventRecord[] = [];
    const jobId = iterationId(id, current.record.next);
    const job = await store.getJob(jobId);
    if (job?.record.state === 'delayed') {
      const pointer = await findPointer(store, job.record);
      ops.push(...removeOps(store.layout, { id: jobId, version: job.version, pointer }));
      events.push({ event: 'removed', jobId, prev: 'delayed', ts: Date.now() });
    }
    const [result] = await store.executor.run([{ build: () => ({ ops, events }) }], { receipt: false });
    if (result?.ok) return true;
    if (attempt >= ATTEMPTS || !isRace(result?.error)) throw result?.error;
    await backoff(attempt);
  }
}

// ---- building blocks ------------------------------------------------------------

/**
 * ZooKeeper's time of the producer's last write (its claim, just before it
 * asks for the next iteration): the same clock whichever process advances
 * the scheduler, so a process with a skewed clock neither skips ticks nor
 * adds them early. The caller's clock when the producer is not readable,
 * and on a session with `clock: 'process'`.
 */
async function serverTime(store: QueueStore, producerId: string, fallback: number): Promise<number> {
  if (store.session.clock === 'process') return fallback; // one process, one clock: the caller's
  const stat = await store.session.exists(store.layout.job(producerId)).catch(() => null);
  return stat?.mtime ?? fallback;
}

function schedulerOp(store: QueueStore, id: string, record: SchedulerRecord, version: number | undefined): ProtocolOp {
  const data = Buffer.from(JSON.stringify(record));
  const path = store.layout.scheduler(id);
  return version === undefined ? { op: 'create', path, data } : { op: 'setData', path, data, version };
}

function iterationRecord(id: string, s: SchedulerRecord, opts: JobsOptions, delay: number, now: number): JobRecord {
  const jobOpts = { ...opts, delay };
  const record = newRecord(id, s.name, JSON.parse(s.data || '{}'), jobOpts, delay > 0 ? 'delayed' : 'waiting', now);
  record.timestamp = now;
  if (delay > 0) record.due = now + delay;
  return record;
}

/** The iteration's share of a transaction: the scheduler write first (it fences), then removal and enqueue. */
async function iterationUnit(
  store: QueueStore,
  p: { scheduler: ProtocolOp; record: JobRecord; removal: ProtocolOp[]; events: QueueEventRecord[] },
): Promise<TxUnit> {
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

/** A random pause growing with the attempts: a plan takes several reads, so busy writers would keep colliding. */
function backoff(attempt: number): Promise<void> {
  return sleep(Math.random() * Math.min(BACKOFF_MAX_MS, 10 * attempt));
}

/** Another process changed the scheduler or the jobs read meanwhile: plan again. */
function isRace(err: unknown): boolean {
  return err instanceof BadVersionError || err instanceof NodeExistsError || err instanceof NoNodeError;
}

function definedOf<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}
