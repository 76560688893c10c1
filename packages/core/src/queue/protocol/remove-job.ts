/**
 * Removing jobs that are not running (queue control's remove, and the
 * removals drain and clean build): the record is deleted at the version
 * read, with its one pointer, the deduplication key that names it, its
 * dependency node, and its place among its parent's dependencies (the last
 * one releases the parent). A claim taken after the read moves the version
 * on, so the transaction fails and the job is left alone; a single removal
 * then reads again (the executor's runPlanned). A claim whose lease ran out
 * goes with its job. Event `removed` {jobId, prev}.
 */
import { NoNodeError } from '../../zk/errors.js';
import { JobStateError } from '../errors.js';
import type { QueueEventRecord } from '../event-record.js';
import type { JobRecord } from '../record.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { DEDUP_ROUNDS } from './dedup-keys.js';
import { releaseOps } from './dedup-release.js';
import { flowIdsAmong, flowRemoval, mayHoldParents } from './flow-bulk-removal.js';
import { detachOps } from './flow-detach.js';
import { joinBuilt } from './flow-parent.js';
import { dropDepsOps } from './flow-sweep.js';
import { activeIds, findPointer, findPointers, laneOfRecord, type Read, readJobsTogether } from './job-reads.js';
import { applyMoves, type Move, removal } from './moves.js';
import type { ProtocolOp } from './units.js';
import { waitingStateOf } from './walks.js';

/**
 * Deletes job `id` with its pointer, wherever it is, and the deduplication
 * key that keeps it, if any. Resolves false when there is no such job;
 * throws JobStateError (ZKQ_JOB_STATE) while it is active. An active job
 * whose claim's lease ran out (not renewed for its lockDuration, by
 * ZooKeeper's clock) is removed with its claim and slot, as BullMQ removes
 * a job whose lock expired.
 * Event `removed` {jobId, prev}.
 */
export async function removeJob(store: ProtocolContext, id: string): Promise<boolean> {
  const { layout } = store;
  await store.init();
  return store.executor.runPlanned(
    async () => {
      const stored = await store.getJob(id);
      if (!stored) return { answer: false };
      const claim = await claimOf(store, id);
      if (claim && !claim.ranOut) {
        throw new JobStateError(id, 'is active (claimed by a worker) and cannot be removed');
      }
      // a claim whose lease ran out goes first, with the job (its worker's late writes fail on the pointer)
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
        [...release, ...drop, ...(detach?.ops ?? [])],
        detach?.wakes === true,
        unclaim,
      );
      return { answer: true, unit: move };
    },
    // read back by its receipt: planned again after a lost reply, it found its job gone (answered false), or removed the one added again under its id
    { receipt: true },
  );
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
  store: ProtocolContext,
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
  store: ProtocolContext,
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

export function flowMove(store: ProtocolContext, j: Read, stored: StoredJob): Move {
  return flowRemoval(store, { ...j, stored }, [removedEvent(j.id, stored.record)]);
}

export function removeMove(store: ProtocolContext, j: Read): Move {
  return removal(
    store,
    { id: j.id, version: j.version, pointer: j.pointer },
    j.stored ? [removedEvent(j.id, j.stored.record)] : [],
  );
}

/** `move` removing a job, with the deduplication key that names it (read whenever the move is built). */
export function releasing(store: ProtocolContext, move: Move, stored: StoredJob | undefined): Move {
  if (!stored?.record.opts.deduplication) return move;
  return { ...move, build: async () => joinBuilt(await move.build(), { ops: await releaseOps(store, stored.record) }) };
}

/**
 * A removal whose deduplication key was deleted by the sweep (or by hand)
 * since it was read is built again (the key read again), DEDUP_ROUNDS times
 * at most; any other conflict leaves the job alone.
 */
export function releasingAgain(store: ProtocolContext): (move: Move, op: ProtocolOp) => Move | undefined {
  const rounds = new Map<Move, number>();
  return (move, op) => {
    if (op.op !== 'check' || op.path !== store.layout.dedupDir) return undefined;
    const round = (rounds.get(move) ?? 0) + 1;
    rounds.set(move, round);
    return round < DEDUP_ROUNDS ? move : undefined;
  };
}

/** The state a job leaves, as events name it. */
function prevState(r: JobRecord): string {
  if (r.state === 'waiting' || r.state === 'active') return waitingStateOf(laneOfRecord(r));
  return r.state;
}

export function removedEvent(jobId: string, r: JobRecord): QueueEventRecord {
  return { event: 'removed', jobId, prev: prevState(r), ts: Date.now() };
}
