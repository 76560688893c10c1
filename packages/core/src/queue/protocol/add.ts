/**
 * Adding jobs: each job's record and its one pointer (ready in its lane, or
 * delayed until its due time), with its deduplication key when it has one,
 * in as few transactions as fit, in order (FIFO). The adds of one turn of
 * the event loop share transactions (add-batch.ts).
 *
 * An add that meets its queue gone (obliterated by another client: a
 * missing node) or a numbered id stored already (an id of a block taken off
 * the counter of a queue obliterated since and made again: the counter
 * never hands an id out twice) is not added; the caller sets the queue up
 * again and plans it again, with a new id (dedup-add.ts).
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../event-record.js';
import { encodeRecord, type JobRecord } from '../record.js';
import type { Turn } from '../runtime/call-order.js';
import type { EnqueueBatch, EnqueueUnit } from './add-batch.js';
import { dedupKeyOp, enqueueOps } from './builders.js';
import type { Place, ProtocolContext } from './context.js';
import type { Built, ProtocolOp } from './units.js';

/** Enqueue transactions one call keeps in flight (when no custom id can make one fail). */
export const ENQUEUE_IN_FLIGHT = 8;

/** A job to enqueue: its record (state waiting or delayed) and where its pointer goes. */
export interface EnqueueEntry {
  record: JobRecord;
  lane: string;
  /** A custom job id (the create may fail: de-duplication). */
  custom?: boolean;
  /**
   * A deduplication key to create with the job (see dedup-keys.ts): its create
   * fails while one exists, and `met` then gives the unit that settles the
   * entry against the key, sent in its place (dedup-take-over.ts).
   */
  dedup?: { id: string; data: Buffer; met(): EnqueueUnit };
}

/** The events of a job added: `added`, then `delayed` or `waiting`. */
export function enqueueEvents(record: JobRecord): QueueEventRecord[] {
  const ts = Date.now();
  const second =
    record.state === 'delayed'
      ? { event: 'delayed', jobId: record.id, delay: record.due, ts }
      : { event: 'waiting', jobId: record.id, ts };
  return [{ event: 'added', jobId: record.id, name: record.name, ts }, second];
}

/**
 * What adds `record` (its lane set; `data`, its encoding): the record and
 * its pointer, where its state puts it (ready in its lane, or delayed until
 * its due time), with `key` (a deduplication key's op) in the same multi.
 */
export async function addedBuilt(
  ctx: ProtocolContext,
  record: JobRecord,
  data: Buffer,
  key?: ProtocolOp,
): Promise<Built> {
  const place: Place =
    record.state === 'delayed'
      ? { kind: 'delayed', due: record.due ?? Date.now() }
      : { kind: 'ready', lane: record.lane as string };
  return {
    ops: enqueueOps(ctx.layout, record.id, data, await ctx.destination(place), key),
    events: enqueueEvents(record),
    wakes: record.state !== 'delayed',
  };
}

/** What became of the entries of an enqueue that were not added. */
export interface EnqueueOutcome {
  /** Ids of entries whose custom id exists already (BullMQ's de-duplication by id). */
  existing: string[];
  /**
   * Entries (their indexes) to plan again once the queue is set up again,
   * with the error they met: a missing node, or their numbered id stored
   * already (see the header).
   */
  again: { index: number; error: unknown }[];
}

/**
 * Enqueues entries through `batch` (QueueStore.enqueue): entries whose
 * custom id exists already are skipped and reported in `existing`, those to
 * plan again in `again`; an entry whose deduplication key exists is settled
 * against it by the unit its `met` gives, at its place; an entry too large
 * for any transaction fails the call before anything is written. With a
 * `turn`, the entries join the group commit only once every earlier turn
 * has (see CallOrder).
 */
export async function addJobs(
  ctx: ProtocolContext,
  batch: EnqueueBatch,
  entries: readonly EnqueueEntry[],
  turn?: Turn,
): Promise<EnqueueOutcome> {
  const { layout } = ctx;
  const units: EnqueueUnit[] = entries.map((e) => {
    const record: JobRecord = { ...e.record, lane: e.lane };
    const data = encodeRecord(record);
    const { dedup } = e;
    return {
      build: async () => {
        if (dedup) await ctx.ensureDir(layout.dedupShard(dedup.id));
        return addedBuilt(ctx, record, data, dedup && dedupKeyOp(layout, dedup));
      },
      onConflict: (error, op) =>
        dedup && error instanceof NodeExistsError && op.path === layout.dedupKey(dedup.id) ? dedup.met() : undefined,
    };
  });
  // Custom ids and keys may fail their create; a failed transaction sent again would then land
  // after later pipelined ones, so those calls send one transaction at a time (FIFO holds).
  const inFlight = entries.some((e) => e.custom || e.dedup) ? 1 : ENQUEUE_IN_FLIGHT;
  await turn?.wait();
  const sent = batch.run(units, inFlight);
  turn?.pass();
  const results = await sent;
  const outcome: EnqueueOutcome = { existing: [], again: [] };
  for (const [i, r] of results.entries()) {
    const entry = entries[i] as EnqueueEntry;
    const id = entry.record.id;
    if (r.ok) continue;
    if (r.error instanceof NodeExistsError && r.op?.path === layout.job(id)) {
      if (entry.custom) outcome.existing.push(id);
      else outcome.again.push({ index: i, error: r.error });
    } else if (r.error instanceof NoNodeError) outcome.again.push({ index: i, error: r.error });
    else throw r.error;
  }
  return outcome;
}
