/**
 * Queue control: remove, retry and promote one job; drain, clean, retry and
 * promote many; obliterate the whole queue (BullMQ's names and meanings).
 *
 * Every move keeps the job protocol (transitions.ts): the record is read
 * (version v) BEFORE the claims are looked at, and the transaction writes or
 * deletes the record *at version v* while it swaps the job's one pointer. A
 * claim taken after the read moves the version on, so the transaction fails
 * and the job is left alone: an active job (one with a claim node) is never
 * touched. A record marked active whose claim is gone belongs to a worker
 * that died mid-attempt; it is waiting to be claimed again and is treated as
 * waiting.
 *
 * Bulk operations put up to MOVE_BATCH_OPS operations in one transaction;
 * when one job conflicts (it was claimed, promoted or removed meanwhile) it
 * is dropped and the rest is written again.
 *
 * Events (QueueEvents): `removed` {jobId, prev} per job removed by removeJob
 * and drain; `waiting` {jobId, prev} per job retried or promoted; `cleaned`
 * {count} per transaction of clean. obliterate deletes the event log with
 * the rest of the queue and emits nothing.
 */
import { ZkqError } from '../errors.js';
import { BadVersionError, NodeExistsError, NoNodeError, NotEmptyError } from '../zk/errors.js';
import { sortBySequence } from '../zk/sequence.js';
import type { Op, OpResult } from '../zk/types.js';
import { JobNotFoundError, JobStateError } from './errors.js';
import type { QueueEventRecord } from './events.js';
import { sortLanes } from './head.js';
import { dueOfDelayed, idOfDelayed, idOfPointer, LIFO_LANE, laneOf } from './layout.js';
import { decodeRecord, encodeRecord, type JobRecord } from './record.js';
import type { QueueStore, StoredJob } from './store.js';
import type { FinishedStatus, JobType } from './types.js';

/** Most operations per bulk transaction. */
export const MOVE_BATCH_OPS = 200;
/** Jobs read at once by bulk operations. */
const READ_CHUNK = 100;
/** Attempts of a single-job move whose job keeps changing under it. */
const MOVE_ATTEMPTS = 5;
/** Rounds of deletion before obliterate gives up on a queue whose clients keep writing. */
const OBLITERATE_ROUNDS = 5;
/** Lane of jobs without priority. */
const PLAIN_LANE = laneOf(0, false);

/** The queue still has active jobs (or clients that keep writing to it); nothing more was deleted. */
export class QueueNotEmptyError extends ZkqError {
  constructor(
    readonly queue: string,
    readonly active: number,
    message = `queue '${queue}' has ${active} active job(s): close its workers first, or pass { force: true }`,
  ) {
    super('ZKQ_QUEUE_NOT_EMPTY', message);
  }
}

/** Options of retryJob / Job.retry (BullMQ's RetryOptions; zkq resets both counters unless told not to). */
export interface RetryJobOptions {
  /** Only retry a job in this state (default: completed or failed). */
  state?: FinishedStatus;
  /** Reset attemptsMade to 0 (default true). */
  resetAttemptsMade?: boolean;
  /** Reset attemptsStarted to 0 (default true). */
  resetAttemptsStarted?: boolean;
}

/** Options of obliterate (BullMQ's ObliterateOpts; `count` is accepted and not needed). */
export interface ObliterateOptions {
  /** Delete the queue even while jobs are active (their workers then fail to record results). */
  force?: boolean;
  count?: number;
}

/** A state `clean` accepts (BullMQ's). */
export type CleanType = Extract<
  JobType,
  'completed' | 'wait' | 'waiting' | 'active' | 'paused' | 'prioritized' | 'delayed' | 'failed'
>;

// ---- single jobs -------------------------------------------------------------

/**
 * Deletes job `id` with its pointer, wherever it is. Resolves false when there
 * is no such job; throws JobStateError (ZKQ_JOB_STATE) while it is active.
 * Event `removed` {jobId, prev}.
 */
export async function removeJob(store: QueueStore, id: string): Promise<boolean> {
  const { layout } = store;
  return retryMove(store, async () => {
    const stored = await store.getJob(id);
    if (!stored) return false;
    if (await store.session.exists(layout.claim(id))) {
      throw new JobStateError(id, 'is active (claimed by a worker) and cannot be removed');
    }
    const pointer = await findPointer(store, stored.record);
    const ops: Op[] = [{ op: 'delete', path: layout.job(id), version: stored.version }];
    if (pointer) ops.push({ op: 'delete', path: pointer });
    return { ops, events: [removedEvent(id, stored.record)], result: true };
  });
}

/**
 * Moves a completed or failed job back to waiting, as a fresh job: attempt
 * counters, stall count, failure reason, return value and timestamps are
 * reset (the stack trace is kept). Throws JobNotFoundError, or JobStateError
 * when the job is not finished (or not in `opts.state`).
 * Event `waiting` {jobId, prev}.
 */
export async function retryJob(store: QueueStore, id: string, opts: RetryJobOptions = {}): Promise<void> {
  await retryMove(store, async () => {
    const stored = await store.getJob(id);
    if (!stored) throw new JobNotFoundError(id);
    const prev = stored.record.state;
    if ((prev !== 'completed' && prev !== 'failed') || (opts.state && prev !== opts.state)) {
      throw new JobStateError(id, `is ${prev}, not ${opts.state ?? 'completed or failed'}: cannot retry it`);
    }
    const pointer = await findPointer(store, stored.record);
    return { ops: await retryOps(store, stored, pointer, opts), events: [waitingEvent(id, prev)], result: undefined };
  });
}

/**
 * Moves a delayed job to waiting now. Throws JobNotFoundError, or
 * JobStateError when it is not delayed. Event `waiting` {jobId, prev: 'delayed'}.
 */
export async function promoteJob(store: QueueStore, id: string): Promise<void> {
  await retryMove(store, async () => {
    const stored = await store.getJob(id);
    if (!stored) throw new JobNotFoundError(id);
    if (stored.record.state !== 'delayed') {
      throw new JobStateError(id, `is ${stored.record.state}, not delayed: cannot promote it`);
    }
    const pointer = await findPointer(store, stored.record);
    return { ops: await promoteOps(store, stored, pointer), events: [waitingEvent(id, 'delayed')], result: undefined };
  });
}

// ---- many jobs ---------------------------------------------------------------

/**
 * Retries the jobs in `state` (default failed) that finished at or before
 * `timestamp` (default now), `count` (default 1000) at a time, oldest first.
 * Resolves with the number retried.
 */
export async function retryJobs(
  store: QueueStore,
  opts: { state?: FinishedStatus; count?: number; timestamp?: number } = {},
): Promise<number> {
  await store.init();
  const state = opts.state ?? 'failed';
  const timestamp = opts.timestamp ?? Date.now();
  const dir = state === 'completed' ? store.layout.completedDir : store.layout.failedDir;
  const names = sortBySequence(await store.children(dir));
  let moved = 0;
  for (const chunk of chunked(names, positive(opts.count, 1000))) {
    const jobs = await readJobs(
      store,
      chunk.map((n) => ({ id: idOfPointer(n), pointer: `${dir}/${n}` })),
    );
    const moves: Move[] = [];
    for (const j of jobs) {
      if (!j.stored || j.stored.record.state !== state) continue;
      if ((j.stored.record.finishedOn ?? 0) > timestamp) continue;
      const stored = j.stored;
      moves.push({
        id: j.id,
        build: () => retryOps(store, stored, j.pointer, {}),
        events: [waitingEvent(j.id, state)],
      });
    }
    moved += (await applyMoves(store, moves)).length;
  }
  return moved;
}

/** Promotes every delayed job, `count` (default 1000) at a time. Resolves with the number promoted. */
export async function promoteJobs(store: QueueStore, opts: { count?: number } = {}): Promise<number> {
  await store.init();
  let moved = 0;
  for await (const chunk of delayedPointers(store, positive(opts.count, 1000))) {
    const moves: Move[] = [];
    for (const j of await readJobs(store, chunk)) {
      if (j.stored?.record.state !== 'delayed') continue;
      const stored = j.stored;
      moves.push({
        id: j.id,
        build: () => promoteOps(store, stored, j.pointer),
        events: [waitingEvent(j.id, 'delayed')],
      });
    }
    moved += (await applyMoves(store, moves)).length;
  }
  return moved;
}

/**
 * Removes every waiting job (prioritized ones included) and, with `delayed`,
 * every delayed job; never an active, completed or failed one (BullMQ's
 * drain). Event `removed` {jobId, prev} per job. Resolves with the number removed.
 */
export async function drain(store: QueueStore, delayed = false): Promise<number> {
  await store.init();
  let removed = 0;
  // delayed first: a job the leader promotes meanwhile is then met in ready/
  const sources = [...(delayed ? [delayedPointers(store, READ_CHUNK)] : []), readyPointers(store, () => true)];
  for (const source of sources) {
    for await (const chunk of source) {
      const jobs = await readJobs(store, chunk);
      const active = await activeIds(store);
      const moves = jobs.filter((j) => !active.has(j.id)).map((j) => removeMove(store, j));
      removed += (await applyMoves(store, moves)).length;
    }
  }
  await removeEmptyBuckets(store);
  return removed;
}

/**
 * BullMQ's `clean(grace, limit, type)`: removes up to `limit` (0: no limit)
 * jobs of `type` older than `grace` ms — by finishedOn for completed and
 * failed jobs, by timestamp (creation) for the others — and resolves with
 * their ids. `wait`, `waiting` and `paused` mean the waiting jobs without
 * priority; `active` removes nothing, since a claimed job is never removed.
 * Event `cleaned` {count} per transaction.
 */
export async function clean(
  store: QueueStore,
  grace: number,
  limit: number,
  type: CleanType = 'completed',
): Promise<string[]> {
  await store.init();
  const { layout } = store;
  const cutoff = Date.now() - Math.max(0, grace);
  const max = limit > 0 ? limit : Number.POSITIVE_INFINITY;
  const finished = type === 'completed' || type === 'failed';
  let source: AsyncIterable<Located[]>;
  if (finished) {
    const dir = type === 'completed' ? layout.completedDir : layout.failedDir;
    source = finishedPointers(store, dir);
  } else if (type === 'delayed') {
    source = delayedPointers(store, READ_CHUNK);
  } else if (type === 'prioritized') {
    source = readyPointers(store, (lane) => lane !== LIFO_LANE && lane !== PLAIN_LANE);
  } else if (type === 'wait' || type === 'waiting' || type === 'paused') {
    source = readyPointers(store, (lane) => lane === LIFO_LANE || lane === PLAIN_LANE);
  } else {
    return []; // 'active': claimed jobs are never removed
  }
  const removed: string[] = [];
  for await (const chunk of source) {
    const jobs = await readJobs(store, chunk);
    const active = finished ? new Set<string>() : await activeIds(store);
    const moves: Move[] = [];
    for (const j of jobs) {
      if (removed.length + moves.length >= max) break;
      if (!j.stored || active.has(j.id)) continue;
      const r = j.stored.record;
      const age = finished ? (r.finishedOn ?? r.timestamp) : r.timestamp;
      if (age > cutoff || !inCleanState(r, type)) continue;
      moves.push({ ...removeMove(store, j), events: [] });
    }
    removed.push(...(await applyMoves(store, moves, (n) => [{ event: 'cleaned', count: String(n), ts: Date.now() }])));
    if (removed.length >= max) break;
  }
  return removed;
}

/**
 * Deletes the whole queue: every job, pointer, setting and event. Pauses it
 * first; without `force`, refuses with QueueNotEmptyError while any job is
 * active (and then restores the pause flag). The claims directory is
 * deleted before anything else, so no worker can claim a job during the
 * deletion. Close the queue's workers first: a live worker writes its
 * membership and election nodes again, and obliterate gives up with
 * QueueNotEmptyError after a few rounds.
 */
export async function obliterate(store: QueueStore, opts: ObliterateOptions = {}): Promise<void> {
  const { session, layout } = store;
  await store.init();
  if (!(await session.exists(layout.root))) return store.forgetDirs();
  // no meta: a half-deleted queue (an earlier obliterate), nothing to pause
  const wasPaused = await store.isPaused().catch((err) => {
    if (err instanceof NoNodeError) return true;
    throw err;
  });
  if (!wasPaused) await store.setPaused(true);
  try {
    await session.delete(layout.claimsDir);
  } catch (err) {
    if (err instanceof NotEmptyError) {
      if (!opts.force) {
        const active = (await store.children(layout.claimsDir)).length;
        if (!wasPaused) await store.setPaused(false);
        throw new QueueNotEmptyError(store.queue, active);
      }
    } else if (!(err instanceof NoNodeError)) throw err;
  }
  for (let round = 0; ; round++) {
    try {
      await session.deleteRecursive(layout.root);
    } catch (err) {
      if (!(err instanceof NotEmptyError) || round >= OBLITERATE_ROUNDS) throw err; // a node appeared meanwhile
    }
    if (!(await session.exists(layout.root))) break;
    if (round >= OBLITERATE_ROUNDS) {
      throw new QueueNotEmptyError(
        store.queue,
        0,
        `queue '${store.queue}' keeps being written to while it is deleted: close its workers and listeners first`,
      );
    }
  }
  store.forgetDirs();
}

// ---- moves -------------------------------------------------------------------

/** One job's move: its ops (built again after a directory went missing) and events. */
interface Move {
  id: string;
  build: () => Promise<Op[]>;
  events: QueueEventRecord[];
}

/** A job found through its pointer, with its record when readable (undefined: gone or malformed). */
interface Located {
  id: string;
  pointer: string;
}
interface Read extends Located {
  stored: StoredJob | undefined;
  /** Record version when the node exists (malformed records included). */
  version: number | undefined;
}

/**
 * Writes moves in transactions of up to MOVE_BATCH_OPS ops. A job whose op
 * conflicts is dropped (it changed meanwhile); a missing directory (a ready
 * bucket removed) is created again. Resolves with the ids moved.
 * `batchEvents(n)` adds events per transaction of `n` jobs.
 */
async function applyMoves(
  store: QueueStore,
  moves: Move[],
  batchEvents: (n: number) => QueueEventRecord[] = () => [],
): Promise<string[]> {
  const done: string[] = [];
  let rest = moves;
  while (rest.length > 0) {
    let batch: { move: Move; ops: Op[] }[] = [];
    let size = 0;
    for (const move of rest) {
      const ops = await move.build();
      if (batch.length > 0 && size + ops.length > MOVE_BATCH_OPS) break;
      batch.push({ move, ops });
      size += ops.length;
    }
    rest = rest.slice(batch.length);
    for (let rebuilt = 0; batch.length > 0; ) {
      const ops = batch.flatMap((b) => b.ops);
      const eventOp = store.events.op([...batch.flatMap((b) => b.move.events), ...batchEvents(batch.length)]);
      try {
        const results = await store.session.multi(eventOp ? [...ops, eventOp] : ops);
        afterMove(store, results);
        done.push(...batch.map((b) => b.move.id));
        break;
      } catch (err) {
        const index = conflictIndex(err, ops.length);
        if (index === undefined) throw err;
        let at = 0;
        const culprit = batch.find((b) => {
          at += b.ops.length;
          return index < at;
        });
        const op = ops[index] as Op;
        if (err instanceof NoNodeError && op.op === 'create' && rebuilt++ < 3) {
          store.forgetDirs(); // a bucket we cached was removed
          batch = await Promise.all(batch.map(async (b) => ({ move: b.move, ops: await b.move.build() })));
        } else {
          batch = batch.filter((b) => b !== culprit);
        }
      }
    }
  }
  return done;
}

/**
 * Runs a single-job move: `plan` reads the job and returns its ops, and is
 * run again when the job changed between the read and the write.
 */
async function retryMove<T>(
  store: QueueStore,
  plan: () => Promise<T | { ops: Op[]; events: QueueEventRecord[]; result: T }>,
): Promise<T> {
  await store.init();
  for (let attempt = 1; ; attempt++) {
    const planned = await plan();
    if (!isPlanned(planned)) return planned;
    const eventOp = store.events.op(planned.events);
    try {
      const results = await store.session.multi(eventOp ? [...planned.ops, eventOp] : planned.ops);
      afterMove(store, results);
      return planned.result;
    } catch (err) {
      if (conflictIndex(err, planned.ops.length) === undefined || attempt >= MOVE_ATTEMPTS) throw err;
      if (err instanceof NoNodeError) store.forgetDirs();
    }
  }
}

function isPlanned<T>(p: unknown): p is { ops: Op[]; events: QueueEventRecord[]; result: T } {
  return typeof p === 'object' && p !== null && 'ops' in p && 'events' in p;
}

/** Index of the op that lost a race (inside the first `count` ops), else undefined. */
function conflictIndex(err: unknown, count: number): number | undefined {
  const racy = err instanceof NoNodeError || err instanceof BadVersionError || err instanceof NodeExistsError;
  const index = racy ? err.opIndex : undefined;
  return index !== undefined && index < count ? index : undefined;
}

/** After a move: trim the event log (ready buckets roll as their slots are reserved: readyPointerOp). */
function afterMove(store: QueueStore, results: OpResult[]): void {
  store.events.afterWrite(results.map((r) => (r.op === 'create' ? r.path : undefined)));
}

function removeMove(store: QueueStore, j: Read): Move {
  const ops: Op[] = [{ op: 'delete', path: j.pointer }];
  if (j.version !== undefined) ops.unshift({ op: 'delete', path: store.layout.job(j.id), version: j.version });
  return {
    id: j.id,
    build: async () => ops,
    events: j.stored ? [removedEvent(j.id, j.stored.record)] : [],
  };
}

async function retryOps(
  store: QueueStore,
  stored: StoredJob,
  pointer: string | undefined,
  opts: RetryJobOptions,
): Promise<Op[]> {
  const r = stored.record;
  const lane = laneOfRecord(r);
  const record: JobRecord = {
    ...r,
    state: 'waiting',
    lane,
    attemptsMade: opts.resetAttemptsMade === false ? r.attemptsMade : 0,
    attemptsStarted: opts.resetAttemptsStarted === false ? r.attemptsStarted : 0,
    stalledCounter: 0,
    failedReason: undefined,
    returnvalue: undefined,
    finishedOn: undefined,
    processedOn: undefined,
    processedBy: undefined,
    due: undefined,
  };
  return moveOps(store, stored, record, pointer);
}

async function promoteOps(store: QueueStore, stored: StoredJob, pointer: string | undefined): Promise<Op[]> {
  const record: JobRecord = { ...stored.record, state: 'waiting', due: undefined, delay: 0 };
  return moveOps(store, stored, record, pointer);
}

/** Rewrites the record at the version read, deletes the old pointer, adds a ready pointer. */
async function moveOps(store: QueueStore, stored: StoredJob, record: JobRecord, pointer: string | undefined) {
  const { op: ready } = await store.readyPointerOp(record.id, laneOfRecord(record));
  const ops: Op[] = [
    { op: 'setData', path: store.layout.job(record.id), data: encodeRecord(record), version: stored.version },
  ];
  if (pointer) ops.push({ op: 'delete', path: pointer });
  ops.push(ready);
  return ops;
}

// ---- finding and reading jobs ------------------------------------------------

function laneOfRecord(r: JobRecord): string {
  return r.lane ?? laneOf(r.priority ?? 0, r.opts?.lifo === true);
}

/** The state a job leaves, as events name it. */
function prevState(r: JobRecord): string {
  if (r.state === 'waiting' || r.state === 'active') return laneOfRecord(r) === PLAIN_LANE ? 'waiting' : 'prioritized';
  return r.state;
}

function removedEvent(jobId: string, r: JobRecord): QueueEventRecord {
  return { event: 'removed', jobId, prev: prevState(r), ts: Date.now() };
}

function waitingEvent(jobId: string, prev: string): QueueEventRecord {
  return { event: 'waiting', jobId, prev, ts: Date.now() };
}

function inCleanState(r: JobRecord, type: CleanType): boolean {
  if (type === 'completed' || type === 'failed' || type === 'delayed') return r.state === type;
  return r.state === 'waiting' || r.state === 'active'; // active in the record, unclaimed: waiting again
}

/** The path of the job's one pointer, found from what its record says, or undefined. */
async function findPointer(store: QueueStore, r: JobRecord): Promise<string | undefined> {
  const { layout, session } = store;
  switch (r.state) {
    case 'waiting':
    case 'active': {
      const laneDir = layout.lane(laneOfRecord(r));
      for (const bucket of sortBySequence(await store.children(laneDir))) {
        const names = await store.children(`${laneDir}/${bucket}`);
        const name = names.find((n) => n.startsWith(`qn-${r.id}-`) && idOfPointer(n) === r.id);
        if (name) return `${laneDir}/${bucket}/${name}`;
      }
      return undefined;
    }
    case 'delayed': {
      if (r.due !== undefined && (await session.exists(layout.delayed(r.due, r.id))))
        return layout.delayed(r.due, r.id);
      for await (const chunk of delayedPointers(store, READ_CHUNK)) {
        const hit = chunk.find((p) => p.id === r.id);
        if (hit) return hit.pointer;
      }
      return undefined;
    }
    default: {
      const dir = r.state === 'completed' ? layout.completedDir : layout.failedDir;
      const prefix = `${r.state === 'completed' ? 'c' : 'f'}-${r.id}-`;
      const name = (await store.children(dir)).find((n) => n.startsWith(prefix) && idOfPointer(n) === r.id);
      return name ? `${dir}/${name}` : undefined;
    }
  }
}

/** Reads the records of `located` jobs; a gone record leaves both `stored` and `version` undefined. */
async function readJobs(store: QueueStore, located: Located[]): Promise<Read[]> {
  return Promise.all(
    located.map(async (l): Promise<Read> => {
      const path = store.layout.job(l.id);
      try {
        const { data, stat } = await store.session.getData(path);
        try {
          return { ...l, stored: { record: decodeRecord(data, path), version: stat.version }, version: stat.version };
        } catch {
          return { ...l, stored: undefined, version: stat.version }; // malformed
        }
      } catch (err) {
        if (err instanceof NoNodeError) return { ...l, stored: undefined, version: undefined };
        throw err;
      }
    }),
  );
}

/** Ids of the active jobs. List it AFTER reading the records it filters (see the header). */
async function activeIds(store: QueueStore): Promise<Set<string>> {
  return new Set(await store.children(store.layout.claimsDir));
}

async function* readyPointers(store: QueueStore, laneFilter: (lane: string) => boolean): AsyncGenerator<Located[]> {
  const { layout } = store;
  for (const lane of sortLanes(await store.children(layout.ready))) {
    if (!laneFilter(lane)) continue;
    for (const bucket of sortBySequence(await store.children(layout.lane(lane)), undefined, lane === LIFO_LANE)) {
      const dir = `${layout.lane(lane)}/${bucket}`;
      const names = sortBySequence(await store.children(dir), undefined, lane === LIFO_LANE);
      for (const chunk of chunked(names, READ_CHUNK)) {
        yield chunk.map((n) => ({ id: idOfPointer(n), pointer: `${dir}/${n}` }));
      }
    }
  }
}

async function* delayedPointers(store: QueueStore, size: number): AsyncGenerator<Located[]> {
  const { layout } = store;
  for (const w of (await store.children(layout.delayedDir)).sort()) {
    const dir = `${layout.delayedDir}/${w}`;
    const names = (await store.children(dir)).sort((a, b) => dueOfDelayed(a) - dueOfDelayed(b));
    for (const chunk of chunked(names, size)) {
      yield chunk.map((n) => ({ id: idOfDelayed(n), pointer: `${dir}/${n}` }));
    }
  }
}

async function* finishedPointers(store: QueueStore, dir: string): AsyncGenerator<Located[]> {
  for (const chunk of chunked(sortBySequence(await store.children(dir)), READ_CHUNK)) {
    yield chunk.map((n) => ({ id: idOfPointer(n), pointer: `${dir}/${n}` }));
  }
}

/** Deletes the empty ready buckets that are not their lane's tail (as the head scan does). */
async function removeEmptyBuckets(store: QueueStore): Promise<void> {
  const { layout, session } = store;
  for (const lane of await store.children(layout.ready)) {
    const buckets = sortBySequence(await store.children(layout.lane(lane)));
    for (const bucket of buckets.slice(0, -1)) {
      await session.delete(`${layout.lane(lane)}/${bucket}`).catch((err) => {
        if (!(err instanceof NotEmptyError) && !(err instanceof NoNodeError)) throw err;
      });
    }
  }
}

function* chunked<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

function positive(n: number | undefined, fallback: number): number {
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}
