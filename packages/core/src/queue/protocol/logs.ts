/**
 * A job's log lines, kept apart from its record: `logs/<shard>/<jobId>`, a
 * JSON array of the last `keepLogs` lines, bounded in bytes (sizes.ts). So
 * `job.log` never grows the record, and a finish never grows past its limit
 * because of logs.
 *
 * - Writes are not fenced by the attempt's token (as in BullMQ, a line logged
 *   by an attempt that is then revoked stays): an append reads the node and
 *   writes it at the version read (or creates it), and plans again when
 *   another append went first. A worker writes an attempt's lines just before
 *   its finish, all the jobs of a finish batch in one read and one transaction.
 * - A node belongs to the job whose record was created before it: ids come
 *   back (a custom id added again), so a node older than the record (its
 *   czxid lower) holds an earlier job's lines; it is not read, and the next
 *   append replaces it.
 * - Owner: the leader deletes the nodes of jobs that are gone (removed,
 *   trimmed by retention, removed with a flow) on its periodic sweep, a few
 *   shards a pass; an earlier job's node goes with the job now under its id;
 *   obliterate deletes them with the queue.
 * - Records written before logs lived apart keep their lines in `logs`:
 *   they are read before the node's.
 */
import { posix } from 'node:path';
import { NoNodeError } from '../../zk/errors.js';
import { PACKET_LIMIT_BYTES } from '../../zk/limits.js';
import type { Stat } from '../../zk/types.js';
import { decodeRecord, type JobRecord } from '../record.js';
import { keptLogs } from '../sizes.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';
import { type ShardSweep, type ShardSweepRange, sweepShards } from './shard-sweep.js';

/** The job a log write is for: its id, its record's czxid and its `keepLogs`. */
export interface LogOwner {
  id: string;
  czxid: number;
  keepLogs?: number | undefined;
}

/** Log nodes whose jobs the sweep looks for in one read. */
const SWEEP_BATCH = 100;
/** Shards the leader sweeps a pass (of 256): each is swept every 16 passes. */
export const LOG_SWEEP_SHARDS = 16;
/** The name length a shard's listing is budgeted for. */
const LOG_LISTING_NAME_BYTES = 100;
/** The most log nodes of one shard the sweep lists: their listing stays under the packet limit. */
const LOG_LISTING_MAX = Math.floor((PACKET_LIMIT_BYTES - 64 * 1024) / (4 + LOG_LISTING_NAME_BYTES));

/** The lines a log node read holds for `owner` (none when it is an earlier job's). */
function linesOf(data: Buffer, stat: Stat, czxid: number): string[] {
  if (stat.czxid < czxid) return [];
  try {
    const parsed = JSON.parse(data.toString('utf8')) as unknown;
    return Array.isArray(parsed) ? parsed.map(String) : [];
  } catch {
    return [];
  }
}

/**
 * Appends `lines` to the logs of each owner, all in one round of reads and
 * one transaction while nobody else writes them (an earlier job's lines are
 * replaced); the appends another writer went first on are planned again
 * (the executor's one retry policy). Resolves with the number of lines each
 * keeps.
 */
export async function writeLogs(
  store: ProtocolContext,
  writes: readonly { owner: LogOwner; lines: readonly string[] }[],
): Promise<number[]> {
  const { layout } = store;
  return store.executor.runPlannedBatch(
    writes,
    async (pending) => {
      await Promise.all(
        [...new Set(pending.map((w) => layout.logsShard(w.owner.id)))].map((d) => ensureShard(store, d)),
      );
      // one read each, pipelined (a node may be near MAX_LOG_BYTES: a read-only multi of them could pass the packet limit)
      const reads = await Promise.all(pending.map((w) => readNode(store, w.owner.id)));
      return pending.map((w, k) => {
        const there = reads[k];
        const path = layout.logs(w.owner.id);
        const own = there && there.stat.czxid >= w.owner.czxid;
        const before = there && own ? linesOf(there.data, there.stat, w.owner.czxid) : [];
        const kept = keptLogs(before, w.lines, w.owner.keepLogs);
        const data = Buffer.from(JSON.stringify(kept));
        const create: ProtocolOp = { op: 'create', path, data };
        // an earlier job's node is created anew (its czxid then names this job)
        const ops: ProtocolOp[] = !there
          ? [create]
          : own
            ? [{ op: 'setData', path, data, version: there.stat.version }]
            : [{ op: 'delete', path, version: there.stat.version }, create];
        // with receipts: a lost reply is read back, so no line is written twice
        return { answer: kept.length, unit: { build: () => ({ ops }) } };
      });
    },
    {
      onFailure: (error, op) => {
        // the shard directory may be gone (the leader's sweep took it): made again before the next plan,
        // unless the queue itself is gone (obliterated): the plan then fails with NoNodeError
        if (error instanceof NoNodeError && op) store.containers.forget(posix.dirname(op.path));
        return undefined;
      },
    },
  );
}

async function readNode(store: ProtocolContext, id: string): Promise<{ data: Buffer; stat: Stat } | undefined> {
  try {
    return await store.session.getData(store.layout.logs(id));
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

function ensureShard(store: ProtocolContext, dir: string): Promise<void> {
  return store.containers.ensureDir(dir);
}

/** Keeps the last `keep` of a job's log lines in its node, or deletes the node (lines a record kept are the caller's). */
export async function clearJobLogs(store: ProtocolContext, owner: LogOwner, keep: number): Promise<void> {
  const path = store.layout.logs(owner.id);
  await store.executor.runPlanned(
    async () => {
      const there = await readNode(store, owner.id);
      if (!there) return { answer: undefined };
      const lines = linesOf(there.data, there.stat, owner.czxid);
      const kept = keep > 0 ? lines.slice(-keep) : [];
      const op: ProtocolOp =
        kept.length > 0
          ? { op: 'setData', path, data: Buffer.from(JSON.stringify(kept)), version: there.stat.version }
          : { op: 'delete', path, version: there.stat.version };
      return { answer: undefined, unit: { build: () => ({ ops: [op] }) } };
    },
    { receipt: false },
  );
}

/** A job's record with its czxid (the owner of its log node), and its log lines; undefined when there is no job. */
export async function readJobLogs(
  store: ProtocolContext,
  id: string,
): Promise<{ record: JobRecord; czxid: number; logs: string[] } | undefined> {
  const { session, layout } = store;
  // two reads, pipelined: a record and a log node together may pass a reply's packet limit
  const [job, logs] = await Promise.all([
    session.getData(layout.job(id)).catch((err: unknown) => {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    }),
    readNode(store, id),
  ]);
  if (!job) return undefined;
  const record = decodeRecord(job.data, layout.job(id));
  const apart = logs ? linesOf(logs.data, logs.stat, job.stat.czxid) : [];
  // a record written before logs lived apart keeps its own lines: they come first
  const lines = record.logs?.length ? keptLogs(record.logs, apart, record.opts.keepLogs) : apart;
  return { record, czxid: job.stat.czxid, logs: lines };
}

/** What a pass of the log sweep did (`deleted`: log nodes). */
export type LogSweep = ShardSweep;

/** Which shards a pass sweeps: `shards` of them from `from` on (default: all). */
export type LogSweepRange = ShardSweepRange;

/**
 * Deletes the log nodes of jobs that are gone (removed, trimmed by
 * retention, removed with a flow): the leader's tidy-up, LOG_SWEEP_SHARDS
 * shards a pass from where the last one ended (`range`, `next`), so a pass
 * costs a listing per shard and a read per SWEEP_BATCH nodes (whether their
 * jobs are there, in one read-only multi) whatever the number of logged jobs.
 * A node is deleted with its job's record created and deleted in the same
 * transaction, proving the job absent: a job added again meanwhile keeps it.
 * An earlier job's node under an id added again is left to the job there now
 * (it is not read; its next append creates the node anew; it goes once that
 * job is gone): deleted at a version read, it could be the new job's, created
 * anew meanwhile at the same version. A shard too large to list in one reply
 * is left for a later pass (`crowded`); one left empty is removed.
 */
export async function sweepOrphanLogs(
  store: ProtocolContext,
  fence: () => ProtocolOp[],
  range: LogSweepRange = {},
): Promise<LogSweep> {
  return sweepShards(store, store.layout.logsDir, range, {
    listingMax: LOG_LISTING_MAX,
    sweep: async (_dir, ids) => {
      let deleted = 0;
      for (let i = 0; i < ids.length; i += SWEEP_BATCH) {
        const gone = await goneJobs(store, ids.slice(i, i + SWEEP_BATCH));
        deleted += await dropLogsOfGoneJobs(store, gone, fence);
      }
      return { deleted, kept: ids.length - deleted };
    },
    dropEmpty: (dir) => dropEmptyShard(store, dir),
  });
}

/**
 * Deletes the log nodes of `ids`, each with its job's record created and
 * deleted in the same transaction (proving the job gone: one added again
 * meanwhile keeps its node). Resolves with the nodes deleted.
 */
export async function dropLogsOfGoneJobs(
  store: ProtocolContext,
  ids: readonly string[],
  fence?: () => ProtocolOp[],
): Promise<number> {
  if (ids.length === 0) return 0;
  const { layout } = store;
  const units = ids.map((id) => ({
    build: () => ({
      ops: [
        { op: 'create', path: layout.job(id), data: Buffer.alloc(0) },
        { op: 'delete', path: layout.logs(id) },
        { op: 'delete', path: layout.job(id) },
      ] as ProtocolOp[],
    }),
  }));
  const results = await store.executor.run(units, { receipt: false, ...(fence ? { fence } : {}) });
  return results.filter((r) => r.ok).length;
}

/** Which of `ids` have no record (a listing of each record node, in one read-only multi: its reply is a few bytes). */
async function goneJobs(store: ProtocolContext, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const replies = await store.session.readMulti(
    ids.map((id) => ({ op: 'getChildren' as const, path: store.layout.job(id) })),
  );
  return ids.filter((_, i) => {
    const r = replies[i];
    return r !== undefined && !r.ok && r.error instanceof NoNodeError;
  });
}

/** Deletes a shard directory left empty (an append that recreates it meanwhile wins: it is not empty then). */
async function dropEmptyShard(store: ProtocolContext, dir: string): Promise<void> {
  const { session } = store;
  try {
    const left = await session.exists(dir);
    if (left?.numChildren !== 0) return;
    store.containers.forget(dir);
    await session.delete(dir, left.version);
  } catch {
    // an append created a node meanwhile, or the queue was obliterated
  }
}
