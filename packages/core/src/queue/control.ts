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
import { NoNodeError, NotEmptyError } from '../zk/errors.js';
import { DEDUP_ROUNDS, releaseOps } from './dedup.js';
import { JobNotFoundError, JobStateError } from './errors.js';
import type { QueueEventRecord } from './events.js';
import { detachForeignChildren, flowIdsAmong, flowRemoval, mayHoldParents } from './flow-removals.js';
import { laneOf } from './layout.js';
import {
  applyMoves,
  CLAIM_READ_BATCH,
  delayedPointers,
  detachOps,
  dropDepsOps,
  joinBuilt,
  type Located,
  type Move,
  type Plan,
  type ProtocolOp,
  pointersIn,
  promotedRecord,
  readyPointers,
  removal,
  rependOps,
  toReady,
  waitingStateOf,
} from './protocol/index.js';
import { decodeRecord, type JobRecord } from './record.js';
import type { QueueStore, StoredJob } from './store.js';
import type { FinishedStatus, JobType } from './types.js';

/** Jobs read at once by bulk operations. */
const READ_CHUNK = 100;
/** Rounds of deletion before obliterate gives up on a queue whose clients keep writing. */
const OBLITERATE_ROUNDS = 5;

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
 * Deletes job `id` with its pointer, wherever it is, and the deduplication
 * key that keeps it, if any. Resolves false when there is no such job;
 * throws JobStateError (ZKQ_JOB_STATE) while it is active. An active job
 * whose claim's lease ran out (not renewed for its lockDuration, by
 * ZooKeeper's clock) is removed with its claim and slot, as BullMQ removes
 * a job whose lock expired.
 * Event `removed` {jobId, prev}.
 */
export async function removeJob(store: QueueStore, id: string): Promise<boolean> {
  const { layout } = store;
  return moveOne(store, async () => {
    const stored = await store.getJob(id);
    if (!stored) return { answer: false };
    const claim = await claimOf(store, id);
    if (claim && !claim.ranOut) {
      throw new JobStateError(id, 'is active (claimed by a worker) and cannot be removed');
    }
    // a claim whose lease ran out goes with the job (its worker's late writes fail on the record)
    const unclaim: ProtocolOp[] = claim
      ? [
          { op: 'delete', path: layout.claim(id), version: claim.version },
          ...(claim.slot ? [{ op: 'delete' as const, path: layout.slot(claim.slot) }] : []),
        ]
      : [];
    const pointer = await findPointer(store, stored.record);
    const events = [removedEvent(id, stored.record)];
    // BullMQ releases the job's deduplication key with it (a ttl key too)
    const release = await releaseOps(store, stored.record);
    // a child leaves its parent's dependencies (the last one releases it); a parent's go with it
    const detach = await detachOps(store, stored.record);
    const drop = await dropDepsOps(store, id);
    const move = removal(
      store,
      { id, version: stored.version, pointer },
      [...events, ...(detach?.events ?? [])],
      [...release, ...drop, ...(detach?.ops ?? []), ...unclaim],
      detach?.wakes === true,
    );
    return { answer: true, unit: move };
  });
}

/** What removeJobs did with the ids it was given. */
export interface RemovedJobs {
  /** Removed, each with its pointer and deduplication key (event `removed`). */
  removed: string[];
  /** No such job (removeJob's false). */
  missing: string[];
  /** Active (claimed by a worker): left alone (removeJob's JobStateError). */
  active: string[];
  /**
   * Not taken by the batch: jobs of flows, jobs `alone` names, jobs that
   * changed between the read and the write, records not readable, pointers
   * not found. Remove these one by one (removeJob).
   */
  left: string[];
}

/** Jobs removeJobs reads and writes together. */
const REMOVE_CHUNK = 1000;

/**
 * Removes many jobs as removeJob removes one, in batches: their records are
 * read together, the claims listed once, each container their pointers are
 * in listed once, and the removals written in as few transactions as fit
 * (a job removed one by one costs a listing of its container and a few
 * round trips in series). Jobs of flows, and those `alone` names, are
 * passed back in `left`, as are jobs that changed meanwhile.
 */
export async function removeJobs(
  store: QueueStore,
  ids: readonly string[],
  opts: { alone?: (r: JobRecord) => boolean } = {},
): Promise<RemovedJobs> {
  await store.init();
  const out: RemovedJobs = { removed: [], missing: [], active: [], left: [] };
  const unique = [...new Set(ids)];
  const parents = await mayHoldParents(store);
  for (let i = 0; i < unique.length; i += REMOVE_CHUNK) {
    const jobs = await readJobsTogether(store, unique.slice(i, i + REMOVE_CHUNK));
    const active = await activeIds(store); // listed after the records (see the header)
    const flow = await flowIdsAmong(store, jobs, parents);
    const idle: (Read & { stored: StoredJob })[] = [];
    for (const j of jobs) {
      if (!j.stored) (j.version === undefined ? out.missing : out.left).push(j.id);
      else if (active.has(j.id)) out.active.push(j.id);
      else if (flow.has(j.id) || opts.alone?.(j.stored.record)) out.left.push(j.id);
      else idle.push(j as Read & { stored: StoredJob });
    }
    const pointers = await findPointers(
      store,
      idle.map((j) => j.stored.record),
    );
    const moves: Move[] = [];
    for (const j of idle) {
      const pointer = pointers.get(j.id);
      if (pointer === undefined) {
        out.left.push(j.id);
        continue;
      }
      const move = removal(store, { id: j.id, version: j.version, pointer }, [removedEvent(j.id, j.stored.record)]);
      moves.push(releasing(store, move, j.stored));
    }
    const moved = new Set(await applyMoves(store, moves));
    for (const m of moves) (moved.has(m.id) ? out.removed : out.left).push(m.id);
  }
  return out;
}

/**
 * Whether a claim's lease ran out: not renewed (its node's mtime, ZooKeeper's
 * time) for its lockDuration, by ZooKeeper's time `now` at the earliest. A
 * claim that does not say its lease never runs out here.
 */
export function claimRanOut(data: Buffer, mtime: number, now: number): boolean {
  let lease: unknown;
  try {
    lease = (JSON.parse(data.toString()) as { lockDuration?: unknown }).lockDuration;
  } catch {
    return false;
  }
  return typeof lease === 'number' && lease > 0 && mtime + lease < now;
}

/** Job `id`'s claim, if any: its version, its slot, and whether its lease ran out. */
async function claimOf(
  store: QueueStore,
  id: string,
): Promise<{ version: number; slot: string | undefined; ranOut: boolean } | undefined> {
  let claim: { data: Buffer; stat: { version: number; mtime: number } };
  try {
    claim = await store.session.getData(store.layout.claim(id));
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
  let slot: string | undefined;
  try {
    const info = JSON.parse(claim.data.toString()) as { slot?: unknown };
    if (typeof info.slot === 'string') slot = info.slot;
  } catch {
    // a claim not ours to read: it is never taken for run out
  }
  const ranOut = claimRanOut(claim.data, claim.stat.mtime, await store.clock.earliest());
  return { version: claim.stat.version, slot, ranOut };
}

/**
 * Moves a completed or failed job back to waiting, as a fresh job: attempt
 * counters, stall count, failure reason, return value and timestamps are
 * reset (the stack trace is kept). Throws JobNotFoundError, or JobStateError
 * when the job is not finished (or not in `opts.state`).
 * Event `waiting` {jobId, prev}.
 */
export async function retryJob(store: QueueStore, id: string, opts: RetryJobOptions = {}): Promise<void> {
  await moveOne(store, async () => {
    const stored = await store.getJob(id);
    if (!stored) throw new JobNotFoundError(id);
    const prev = stored.record.state;
    if ((prev !== 'completed' && prev !== 'failed') || (opts.state && prev !== opts.state)) {
      throw new JobStateError(id, `is ${prev}, not ${opts.state ?? 'completed or failed'}: cannot retry it`);
    }
    const pointer = await findPointer(store, stored.record);
    return { answer: undefined, unit: retryMove(store, stored, pointer, opts, [waitingEvent(id, prev)]) };
  });
}

/**
 * Moves a delayed job to waiting now. Throws JobNotFoundError, or
 * JobStateError when it is not delayed. Event `waiting` {jobId, prev: 'delayed'}.
 */
export async function promoteJob(store: QueueStore, id: string): Promise<void> {
  await moveOne(store, async () => {
    const stored = await store.getJob(id);
    if (!stored) throw new JobNotFoundError(id);
    if (stored.record.state !== 'delayed') {
      throw new JobStateError(id, `is ${stored.record.state}, not delayed: cannot promote it`);
    }
    const pointer = await findPointer(store, stored.record);
    const record = promotedRecord(stored.record);
    return { answer: undefined, unit: toReady(store, stored, record, pointer, [waitingEvent(id, 'delayed')]) };
  });
}

// ---- many jobs ---------------------------------------------------------------

/**
 * Retries the jobs in `state` (default failed) that finished at or before
 * `timestamp` (default now), `count` (default 1000) at a time, oldest first,
 * resetting their attempt counters unless `opts` keeps them.
 * Resolves with the number retried.
 */
export async function retryJobs(
  store: QueueStore,
  opts: { state?: FinishedStatus; count?: number; timestamp?: number } & Omit<RetryJobOptions, 'state'> = {},
): Promise<number> {
  await store.init();
  const state = opts.state ?? 'failed';
  const timestamp = opts.timestamp ?? Date.now();
  let moved = 0;
  for await (const chunk of pointersIn(store, store.layout.finishedDir(state), positive(opts.count, 1000))) {
    const moves: Move[] = [];
    for (const j of await readJobs(store, chunk)) {
      if (!j.stored || j.stored.record.state !== state) continue;
      if ((j.stored.record.finishedOn ?? 0) > timestamp) continue;
      moves.push(retryMove(store, j.stored, j.pointer, opts, [waitingEvent(j.id, state)]));
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
      const record = promotedRecord(j.stored.record);
      moves.push(toReady(store, j.stored, record, j.pointer, [waitingEvent(j.id, 'delayed')]));
    }
    moved += (await applyMoves(store, moves)).length;
  }
  return moved;
}

/**
 * Removes every waiting job (prioritized ones included) and, with `delayed`,
 * every delayed job; never an active, completed or failed one (BullMQ's
 * drain), each with the deduplication key that names it. Event `removed`
 * {jobId, prev} per job. Resolves with the number removed.
 */
export async function drain(store: QueueStore, delayed = false): Promise<number> {
  await store.init();
  let removed = 0;
  // delayed first: a job the leader promotes meanwhile is then met in ready/
  const sources = [
    ...(delayed ? [delayedPointers(store, READ_CHUNK)] : []),
    readyPointers(store, () => true, READ_CHUNK),
  ];
  const parents = await mayHoldParents(store);
  for (const source of sources) {
    for await (const chunk of source) {
      const jobs = await readJobs(store, chunk);
      const active = await activeIds(store);
      const idle = jobs.filter((j) => !active.has(j.id));
      // jobs of flows leave their parents as they go (flow-removals.ts)
      const flow = await flowIdsAmong(store, idle, parents);
      const moves = idle.map((j) =>
        releasing(store, j.stored && flow.has(j.id) ? flowMove(store, j, j.stored) : removeMove(store, j), j.stored),
      );
      removed += (await applyMoves(store, moves, undefined, releasingAgain(store))).length;
    }
  }
  return removed;
}

/**
 * BullMQ's `clean(grace, limit, type)`: removes up to `limit` (0: no limit)
 * jobs of `type` older than `grace` ms — by finishedOn for completed and
 * failed jobs, by timestamp (creation) for the others — and resolves with
 * their ids. `wait`, `waiting` and `paused` mean the waiting jobs without
 * priority; `active` removes nothing, since a claimed job is never removed.
 * A removed job takes the deduplication key that names it (ttl or not, as
 * BullMQ's clean). Event `cleaned` {count} per transaction.
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
    source = pointersIn(store, layout.finishedDir(type), READ_CHUNK);
  } else if (type === 'delayed') {
    source = delayedPointers(store, READ_CHUNK);
  } else if (type === 'prioritized') {
    source = readyPointers(store, (lane) => waitingStateOf(lane) === 'prioritized', READ_CHUNK);
  } else if (type === 'wait' || type === 'waiting' || type === 'paused') {
    source = readyPointers(store, (lane) => waitingStateOf(lane) === 'waiting', READ_CHUNK);
  } else {
    return []; // 'active': claimed jobs are never removed
  }
  const removed: string[] = [];
  const parents = await mayHoldParents(store);
  for await (const chunk of source) {
    const jobs = await readJobs(store, chunk);
    const active = finished ? new Set<string>() : await activeIds(store);
    const due = jobs.filter((j): j is Read & { stored: StoredJob } => {
      if (!j.stored || active.has(j.id)) return false;
      const r = j.stored.record;
      const age = finished ? (r.finishedOn ?? r.timestamp) : r.timestamp;
      return age <= cutoff && inCleanState(r, type);
    });
    // jobs of flows leave their parents as they go (flow-removals.ts)
    const flow = await flowIdsAmong(store, due, parents);
    const moves = due
      .slice(0, Math.max(0, max - removed.length))
      .map((j) =>
        releasing(
          store,
          flow.has(j.id)
            ? flowRemoval(store, { ...j, stored: j.stored }, [])
            : removal(store, { id: j.id, version: j.version, pointer: j.pointer }, []),
          j.stored,
        ),
      );
    removed.push(...(await applyMoves(store, moves, undefined, releasingAgain(store))));
    if (removed.length >= max) break;
  }
  if (removed.length > 0) await store.publish([{ event: 'cleaned', count: String(removed.length), ts: Date.now() }]);
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
  // children whose parents live in other queues leave their dependencies first
  await detachForeignChildren(store);
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

/** A job found through its pointer, with its record when readable (undefined: gone or malformed). */
interface Read extends Located {
  stored: StoredJob | undefined;
  /** Record version when the node exists (malformed records included). */
  version: number | undefined;
}

/**
 * Runs a single-job move: `plan` reads the job and returns its move (or an
 * answer without one), planned again when the job changed between the read
 * and the write (the executor's retry policy).
 */
async function moveOne<T>(store: QueueStore, plan: () => Promise<Plan<T>>): Promise<T> {
  await store.init();
  return store.executor.runPlanned(plan, { receipt: false });
}

function flowMove(store: QueueStore, j: Read, stored: StoredJob): Move {
  return flowRemoval(store, { ...j, stored }, [removedEvent(j.id, stored.record)]);
}

function removeMove(store: QueueStore, j: Read): Move {
  return removal(
    store,
    { id: j.id, version: j.version, pointer: j.pointer },
    j.stored ? [removedEvent(j.id, j.stored.record)] : [],
  );
}

/** `move` removing a job, with the deduplication key that names it (read whenever the move is built). */
function releasing(store: QueueStore, move: Move, stored: StoredJob | undefined): Move {
  if (!stored?.record.opts.deduplication) return move;
  return { ...move, build: async () => joinBuilt(await move.build(), { ops: await releaseOps(store, stored.record) }) };
}

/**
 * A removal whose deduplication key was deleted by the sweep (or by hand)
 * since it was read is built again (the key read again), DEDUP_ROUNDS times
 * at most; any other conflict leaves the job alone.
 */
function releasingAgain(store: QueueStore): (move: Move, op: ProtocolOp) => Move | undefined {
  const rounds = new Map<Move, number>();
  return (move, op) => {
    if (op.op !== 'check' || op.path !== store.layout.dedupDir) return undefined;
    const round = (rounds.get(move) ?? 0) + 1;
    rounds.set(move, round);
    return round < DEDUP_ROUNDS ? move : undefined;
  };
}

function retryMove(
  store: QueueStore,
  stored: StoredJob,
  pointer: string | undefined,
  opts: RetryJobOptions,
  events: QueueEventRecord[],
): Move {
  const r = stored.record;
  const record: JobRecord = {
    ...r,
    state: 'waiting',
    lane: laneOfRecord(r),
    attemptsMade: opts.resetAttemptsMade === false ? r.attemptsMade : 0,
    attemptsStarted: opts.resetAttemptsStarted === false ? r.attemptsStarted : 0,
    stalledCounter: 0,
    failedReason: undefined,
    deferredFailure: undefined, // spent by the failure this retry undoes
    returnvalue: undefined,
    finishedOn: undefined,
    processedOn: undefined,
    processedBy: undefined,
    due: undefined,
  };
  const move = toReady(store, stored, record, pointer, events);
  if (!r.parentLink) return move;
  // a child becomes pending again for its parent, read anew whenever the unit is built
  return { id: move.id, build: async () => joinBuilt(await move.build(), { ops: await rependOps(store, r) }) };
}

// ---- finding and reading jobs ------------------------------------------------

function laneOfRecord(r: JobRecord): string {
  return r.lane ?? laneOf(r.priority ?? 0, r.opts?.lifo === true);
}

/** The state a job leaves, as events name it. */
function prevState(r: JobRecord): string {
  if (r.state === 'waiting' || r.state === 'active') return waitingStateOf(laneOfRecord(r));
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
export async function findPointer(store: QueueStore, r: JobRecord): Promise<string | undefined> {
  const { layout } = store;
  const search = async (container: string, order: 'sequence' | 'due') => {
    for await (const chunk of pointersIn(store, container, READ_CHUNK, order)) {
      const hit = chunk.find((p) => p.id === r.id);
      if (hit) return hit.pointer;
    }
    return undefined;
  };
  switch (r.state) {
    case 'waiting':
    case 'active':
      return search(layout.lane(laneOfRecord(r)), 'sequence');
    case 'delayed': {
      if (r.due !== undefined) {
        const hit = await search(layout.delayHour(r.due), 'due');
        if (hit) return hit;
      }
      for await (const chunk of delayedPointers(store, READ_CHUNK)) {
        const hit = chunk.find((p) => p.id === r.id);
        if (hit) return hit.pointer;
      }
      return undefined;
    }
    case 'waiting-children':
      return r.parked;
    default:
      return search(layout.finishedDir(r.state), 'sequence');
  }
}

/**
 * The pointers of jobs, found from what their records say, each container
 * listed once. A job whose pointer is not where its record says is missing
 * from the map (findPointer searches further).
 */
async function findPointers(store: QueueStore, records: readonly JobRecord[]): Promise<Map<string, string>> {
  const { layout } = store;
  const found = new Map<string, string>();
  const wanted = new Map<string, { order: 'sequence' | 'due'; ids: Set<string> }>();
  const want = (container: string, order: 'sequence' | 'due', id: string) => {
    const entry = wanted.get(container) ?? { order, ids: new Set<string>() };
    entry.ids.add(id);
    wanted.set(container, entry);
  };
  for (const r of records) {
    if (r.state === 'waiting' || r.state === 'active') want(layout.lane(laneOfRecord(r)), 'sequence', r.id);
    else if (r.state === 'delayed') {
      if (r.due !== undefined) want(layout.delayHour(r.due), 'due', r.id);
    } else if (r.state === 'waiting-children') {
      if (r.parked) found.set(r.id, r.parked);
    } else want(layout.finishedDir(r.state), 'sequence', r.id);
  }
  for (const [container, { order, ids }] of wanted) {
    for await (const chunk of pointersIn(store, container, REMOVE_CHUNK, order)) {
      for (const p of chunk) if (ids.has(p.id)) found.set(p.id, p.pointer);
    }
  }
  return found;
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

/** The records of jobs `ids`, CLAIM_READ_BATCH per read-only multi (their pointers not known: ''). */
async function readJobsTogether(store: QueueStore, ids: readonly string[]): Promise<Read[]> {
  const out: Read[] = [];
  for (let i = 0; i < ids.length; i += CLAIM_READ_BATCH) {
    const batch = ids.slice(i, i + CLAIM_READ_BATCH);
    const replies = await store.session.readMulti(
      batch.map((id) => ({ op: 'getData' as const, path: store.layout.job(id) })),
    );
    batch.forEach((id, j) => {
      const reply = replies[j];
      const path = store.layout.job(id);
      if (!reply?.ok) {
        if (reply?.error instanceof NoNodeError) out.push({ id, pointer: '', stored: undefined, version: undefined });
        else throw reply?.error ?? new NoNodeError(path);
        return;
      }
      let stored: StoredJob | undefined;
      try {
        stored = { record: decodeRecord(reply.data, path), version: reply.stat.version };
      } catch {
        stored = undefined; // malformed
      }
      out.push({ id, pointer: '', stored, version: reply.stat.version });
    });
  }
  return out;
}

/** Ids of the active jobs. List it AFTER reading the records it filters (see the header). */
async function activeIds(store: QueueStore): Promise<Set<string>> {
  return new Set(await store.children(store.layout.claimsDir));
}

function positive(n: number | undefined, fallback: number): number {
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}
