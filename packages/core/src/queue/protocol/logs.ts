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
 *   trimmed by retention, removed with a flow), and the stale ones, on its
 *   periodic sweep; obliterate deletes them with the queue.
 * - Records written before logs lived apart keep their lines in `logs`:
 *   they are read before the node's.
 */
import { BadVersionError, NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { Stat } from '../../zk/types.js';
import { decodeRecord, type JobRecord } from '../record.js';
import { keptLogs } from '../sizes.js';
import type { QueueStore } from '../store.js';
import type { ProtocolOp } from './executor.js';

/** The job a log write is for: its id, its record's czxid and its `keepLogs`. */
export interface LogOwner {
  id: string;
  czxid: number;
  keepLogs?: number | undefined;
}

/** Plans of one append that keeps meeting other appends. */
const APPEND_ATTEMPTS = 8;
/** Log nodes the sweep looks at per round of reads. */
const SWEEP_BATCH = 100;

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
 * replaced). Resolves with the number of lines each keeps.
 */
export async function writeLogs(
  store: QueueStore,
  writes: { owner: LogOwner; lines: readonly string[] }[],
): Promise<number[]> {
  const { layout } = store;
  const counts: number[] = writes.map(() => 0);
  let pending = writes.map((w, i) => ({ ...w, i }));
  for (let attempt = 1; pending.length > 0; attempt++) {
    await Promise.all([...new Set(pending.map((w) => layout.logsShard(w.owner.id)))].map((d) => ensureShard(store, d)));
    // one read each, pipelined (a node may be near MAX_LOG_BYTES: a read-only multi of them could pass the packet limit)
    const reads = await Promise.all(pending.map((w) => readNode(store, w.owner.id)));
    const units = pending.map((w, k) => {
      const there = reads[k];
      const path = layout.logs(w.owner.id);
      const own = there && there.stat.czxid >= w.owner.czxid;
      const before = there && own ? linesOf(there.data, there.stat, w.owner.czxid) : [];
      const kept = keptLogs(before, w.lines, w.owner.keepLogs);
      counts[w.i] = kept.length;
      const data = Buffer.from(JSON.stringify(kept));
      const create: ProtocolOp = { op: 'create', path, data };
      // an earlier job's node is created anew (its czxid then names this job)
      const ops: ProtocolOp[] = !there
        ? [create]
        : own
          ? [{ op: 'setData', path, data, version: there.stat.version }]
          : [{ op: 'delete', path, version: there.stat.version }, create];
      return { build: () => ({ ops }) };
    });
    // with receipts: a lost reply is read back, so no line is written twice
    const results = await store.executor.run(units);
    const next: typeof pending = [];
    results.forEach((r, k) => {
      if (r.ok) return;
      const w = pending[k] as (typeof pending)[number];
      const raced = r.error instanceof BadVersionError || r.error instanceof NodeExistsError;
      const dirGone = r.error instanceof NoNodeError; // an obliterate took the shard directory
      if (!(raced || dirGone) || attempt >= APPEND_ATTEMPTS) throw r.error;
      if (dirGone) store.containers.forget(layout.logsShard(w.owner.id));
      next.push(w);
    });
    pending = next;
  }
  return counts;
}

async function readNode(store: QueueStore, id: string): Promise<{ data: Buffer; stat: Stat } | undefined> {
  try {
    return await store.session.getData(store.layout.logs(id));
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

function ensureShard(store: QueueStore, dir: string): Promise<void> {
  return store.containers.ensureDir(dir);
}

/** Keeps the last `keep` of a job's log lines in its node, or deletes the node (lines a record kept are the caller's). */
export async function clearJobLogs(store: QueueStore, owner: LogOwner, keep: number): Promise<void> {
  const { session, layout } = store;
  const path = layout.logs(owner.id);
  for (let attempt = 1; ; attempt++) {
    let data: Buffer;
    let stat: Stat;
    try {
      ({ data, stat } = await session.getData(path));
    } catch (err) {
      if (err instanceof NoNodeError) return;
      throw err;
    }
    const lines = linesOf(data, stat, owner.czxid);
    const kept = keep > 0 ? lines.slice(-keep) : [];
    const op: ProtocolOp =
      kept.length > 0
        ? { op: 'setData', path, data: Buffer.from(JSON.stringify(kept)), version: stat.version }
        : { op: 'delete', path, version: stat.version };
    const [result] = await store.executor.run([{ build: () => ({ ops: [op] }) }], { receipt: false });
    if (result?.ok) return;
    const raced = result?.error instanceof BadVersionError || result?.error instanceof NoNodeError;
    if (!raced || attempt >= APPEND_ATTEMPTS) throw result?.error;
  }
}

/** A job's record with its czxid (the owner of its log node), and its log lines; undefined when there is no job. */
export async function readJobLogs(
  store: QueueStore,
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

/**
 * Deletes the log nodes of jobs that are gone, and those of an earlier job
 * of the same id: the leader's tidy-up, a shard at a time. A node whose job
 * is gone is deleted with the job's record created and deleted in the same
 * transaction (proving it absent: a job added again meanwhile keeps its
 * node), each at the version read (an append meanwhile keeps it until the
 * next sweep). Empty shard directories are removed. Resolves with the nodes deleted.
 */
export async function sweepOrphanLogs(store: QueueStore, fence: () => ProtocolOp[]): Promise<number> {
  const { session, layout } = store;
  let swept = 0;
  for (const shard of await store.children(layout.logsDir)) {
    const dir = `${layout.logsDir}/${shard}`;
    const ids = await store.children(dir);
    for (let i = 0; i < ids.length; i += SWEEP_BATCH) {
      const batch = ids.slice(i, i + SWEEP_BATCH);
      const stats = await Promise.all(
        batch.map(async (id) => {
          const [node, job] = await Promise.all([session.exists(layout.logs(id)), session.exists(layout.job(id))]);
          return { id, node, job };
        }),
      );
      const units = stats.flatMap(({ id, node, job }) => {
        if (!node || (job && job.czxid < node.czxid)) return []; // gone already, or its job's own
        const del: ProtocolOp = { op: 'delete', path: layout.logs(id), version: node.version };
        const ops: ProtocolOp[] = job
          ? [del] // an earlier job's lines: the job there now was created after them
          : [
              { op: 'create', path: layout.job(id), data: Buffer.alloc(0) },
              del,
              { op: 'delete', path: layout.job(id) },
            ];
        return [{ build: () => ({ ops }) }];
      });
      const results = await store.executor.run(units, { fence, receipt: false });
      swept += results.filter((r) => r.ok).length;
    }
    await dropEmptyShard(store, dir);
  }
  return swept;
}

/** Deletes a shard directory left empty (an append that recreates it meanwhile wins: it is not empty then). */
async function dropEmptyShard(store: QueueStore, dir: string): Promise<void> {
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
