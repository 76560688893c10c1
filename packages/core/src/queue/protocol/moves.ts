/**
 * A job's move as one unit: its record rewritten at the version read and
 * its pointer swapped in the same transaction, so a reader that raced it
 * fails instead of acting twice. The moves of jobs that are not active
 * (promotion, control, retention) are built here and written by applyMoves.
 */
import { NoNodeError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../events.js';
import { encodeRecord, type JobRecord } from '../record.js';
import { diedBefore } from './attempt-counts.js';
import { eventOp, moveOps, type Place, removeOps, rewriteOps } from './builders.js';
import { PLAIN_LANE } from './claim.js';
import type { ProtocolContext, StoredJob } from './context.js';
import type { ProtocolOp, TxUnit, UnitResult } from './executor.js';

/** One job's move: its ops (built again when a bucket went missing) and events. */
export interface Move extends TxUnit {
  id: string;
}

/**
 * Writes moves, as few transactions as fit; a job whose op conflicts (it
 * changed meanwhile) is left alone, unless `again` offers a move to try
 * instead. Resolves with the ids moved. `fence` makes a deposed leader's
 * moves fail with FencedError. Each transaction has a receipt: sent again
 * after it committed, a move fails on its record's version, and its job
 * would be left out of the ids moved.
 */
export async function applyMoves(
  store: ProtocolContext,
  moves: Move[],
  fence?: () => ProtocolOp[],
  again?: (move: Move, op: ProtocolOp) => Move | undefined,
): Promise<string[]> {
  if (moves.length === 0) return [];
  const results: UnitResult[] = await store.executor.run(moves, {
    ...(fence ? { fence } : {}),
    ...(again ? { onConflict: (move: Move, _err: unknown, op: ProtocolOp) => again(move, op) } : {}),
  });
  return moves.filter((_, i) => results[i]?.ok).map((m) => m.id);
}

/** The record of a job moved back to waiting by a promotion, due or by hand: no due time, no delay left (BullMQ's). */
export function promotedRecord(r: JobRecord): JobRecord {
  return { ...r, state: 'waiting', due: undefined, delay: 0 };
}

/** A move of `stored` to the ready lane its record names, from `from` (its old pointer). */
export function toReady(
  store: ProtocolContext,
  stored: StoredJob,
  record: JobRecord,
  from: string | undefined,
  events: QueueEventRecord[],
): Move {
  return moveTo(store, stored, record, from, { kind: 'ready', lane: record.lane ?? PLAIN_LANE }, events);
}

/** A move of `stored`, a delayed job, to its new due time `record.due`, from `from` (its old pointer). */
export function toDelayed(
  store: ProtocolContext,
  stored: StoredJob,
  record: JobRecord & { due: number },
  from: string | undefined,
  events: QueueEventRecord[],
): Move {
  return moveTo(store, stored, record, from, { kind: 'delayed', due: record.due }, events);
}

/** The record at the version read, its old pointer deleted, its new one in `place`; a ready place wakes a worker. */
function moveTo(
  store: ProtocolContext,
  stored: StoredJob,
  record: JobRecord,
  from: string | undefined,
  place: Place,
  events: QueueEventRecord[],
): Move {
  const id = record.id;
  return {
    id,
    build: async () => {
      const left = from && store.layout.isReadyPointer(from) ? await store.session.exists(from) : undefined;
      // a waiting job leaving its ready pointer takes with it the attempts that died on it (their workers'
      // sessions ended with their claims, unrevoked): the next claim, on the new pointer, cannot count them
      const moved = left ? withDiedOn(record, from as string, left.version) : record;
      const m = { id, version: stored.version, record: encodeRecord(moved), from, fromVersion: left?.version };
      return { ops: moveOps(store.layout, m, await store.destination(place)), events, wakes: place.kind === 'ready' };
    },
  };
}

/**
 * The record with the claims of ready pointer `pointer` (at `version`, no
 * claim there) it has not counted, counted: attempts started, and stalls.
 */
function withDiedOn(record: JobRecord, pointer: string, version: number): JobRecord {
  const died = diedBefore(record, pointer, version + 1);
  if (died === 0) return record;
  return {
    ...record,
    attemptsStarted: record.attemptsStarted + died,
    stalledCounter: record.stalledCounter + died,
    counted: { pointer, token: version },
  };
}

/** A move that rewrites the record of a job that is not active where it is (at the version read). */
export function rewrite(
  store: ProtocolContext,
  stored: StoredJob,
  record: JobRecord,
  events: QueueEventRecord[] = [],
): Move {
  const ops = rewriteOps(store.layout, { id: record.id, version: stored.version, record: encodeRecord(record) });
  return { id: record.id, build: () => ({ ops, events }) };
}

/**
 * Logs `events` in a node of their own, whether anyone listens or not (events
 * a client publishes, which a reader may ask for later). Resolves with the
 * node's path, or undefined when a lost reply was settled by the receipt.
 */
export async function logEvents(store: ProtocolContext, events: QueueEventRecord[]): Promise<string | undefined> {
  return store.executor.runPlanned(
    async (attempt) => {
      // the log's directory is gone: made again before the next try, unless the whole queue is
      // (obliterated): then NoNodeError, and nothing of it is made again (Containers)
      if (attempt > 1) await store.ensureDir(store.layout.eventLog);
      return {
        answer: undefined,
        unit: { build: () => ({ ops: [eventOp(store.layout, events)] }) },
        answerOf: (result) => (result.results?.[0] as { path?: string } | undefined)?.path,
      };
    },
    {
      onFailure: (error) => {
        if (!(error instanceof NoNodeError)) return 'fail';
        store.containers.forget(store.layout.eventLog);
        return 'again';
      },
    },
  );
}

/**
 * A move that deletes a job (when its record is readable, at the version
 * read) and its pointer; `also`: ops of the same removal (the delete of the
 * job's deduplication key, at the version read); `first`: ops before them
 * all (the delete of a claim whose lease ran out, before the check that no
 * claim is there).
 */
export function removal(
  store: ProtocolContext,
  r: { id: string; version: number | undefined; pointer: string | undefined },
  events: QueueEventRecord[],
  also: ProtocolOp[] = [],
  /** The removal releases a parent into waiting in this queue. */
  wakes = false,
  first: ProtocolOp[] = [],
): Move {
  const ops = [...first, ...removeOps(store.layout, r), ...also];
  return { id: r.id, build: () => ({ ops, events, wakes }) };
}
