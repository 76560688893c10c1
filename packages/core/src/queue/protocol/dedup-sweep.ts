/**
 * The sweep of deduplication keys (`dedup/<shard>/d-<id>`, see dedup-keys.ts):
 * the owner of the keys no finish or removal deletes. It deletes
 * - a key with a ttl once the ttl ran out, judged on ZooKeeper's clock
 *   (the node's mtime against a write's), never on a client's;
 * - a key without ttl whose job is gone (one a finish gave up on after
 *   losing races for it, or one written before finishes deleted keys);
 * each at the version it read, so a key taken over or extended meanwhile
 * stays. A key is read again after its job was looked for, and judged only
 * if it still names that job: a key deleted with its job (a finish, a
 * removal) and created again by a newer add starts again at version 0, the
 * version read maybe; a run-out key whose job exists is deleted only while
 * the job does (its removal deletes the key); and each delete bumps the
 * generation of keys (`dedup/`'s version), which an add writing to a key it
 * read checks (dedup-keys.ts). Then the shard directories it left empty (a
 * delete of a directory that gained a key fails, and an add whose shard
 * vanished makes it again: its create is `into`); `dedup/` stays, so its
 * version only grows.
 *
 * Bounded: a shard is listed only while its child count (its stat) says
 * the listing fits in a reply at names of up to DEDUP_LISTING_NAME_BYTES;
 * a larger one is left for a later sweep, once finishes and removals have
 * shrunk it, and reported in `crowded`. Keys are read a batch at a time.
 * Paced: every live key is read when its shard is swept, so the leader
 * sweeps DEDUP_SWEEP_SHARDS shards a pass, from where the last pass ended
 * (`from`, `next`); a key stays stale, deduplicating nothing, until then.
 */
import { NoNodeError } from '../../zk/errors.js';
import { PACKET_LIMIT_BYTES } from '../../zk/limits.js';
import { dedupGenerationBumpOp, keptJobCheckOp } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp, TxUnit } from './executor.js';
import { type ShardSweep, type ShardSweepRange, sweepShards } from './shard-sweep.js';

/** Keys read (and job paths checked) at once. */
export const DEDUP_SWEEP_BATCH = 100;
/** The name length a shard's listing is budgeted for (an id of ~30 characters URI-encoded at worst). */
export const DEDUP_LISTING_NAME_BYTES = 100;
/** The most keys of one shard the sweep lists: their listing stays under the packet limit. */
export const DEDUP_LISTING_MAX = Math.floor((PACKET_LIMIT_BYTES - 64 * 1024) / (4 + DEDUP_LISTING_NAME_BYTES));

/** Shards the leader sweeps a pass (of 256): each is swept every 16 passes. */
export const DEDUP_SWEEP_SHARDS = 16;

/** What a sweep did (`deleted`: keys). */
export type DedupSweep = ShardSweep;

/** Which shards a pass sweeps: `shards` of them from `from` on (default: all). */
export type DedupSweepRange = ShardSweepRange;

interface SeenKey {
  name: string;
  path: string;
  version: number;
  mtime: number;
  job: string;
  ttl: number | undefined;
}

/**
 * Sweeps shards of the queue's deduplication keys (see the header): every
 * shard, or `range.shards` of them from `range.from` on. `fence` makes a
 * deposed leader's deletes fail with FencedError.
 */
export async function sweepDedupKeys(
  store: ProtocolContext,
  fence?: () => ProtocolOp[],
  range: DedupSweepRange = {},
): Promise<DedupSweep> {
  const { layout } = store;
  let now: number | undefined;
  return sweepShards(store, layout.dedupDir, range, {
    listingMax: DEDUP_LISTING_MAX,
    sweep: async (dir, names) => {
      let swept = 0;
      let kept = names.length;
      for (let i = 0; i < names.length; i += DEDUP_SWEEP_BATCH) {
        const batch = names.slice(i, i + DEDUP_SWEEP_BATCH);
        const first = await readKeys(store, dir, batch);
        if (now === undefined && first.some((k) => k.ttl !== undefined)) now = await store.serverNow();
        const gone = await goneJobs(
          store,
          first.map((k) => k.job),
        );
        // read again after their jobs: a key deleted with its job and created again by a newer
        // add names another job (at the version first read, maybe); only a key still naming the
        // job looked for is judged by it
        const named = new Map(first.map((k) => [k.name, k.job]));
        const again = await readKeys(
          store,
          dir,
          first.map((k) => k.name),
        );
        kept -= batch.length - again.length; // gone meanwhile
        const keys = again.filter((k) => named.get(k.name) === k.job);
        const due = keys.filter((k) =>
          k.ttl === undefined ? gone.has(k.job) : now !== undefined && now - k.mtime >= k.ttl,
        );
        // a run-out key of a job that exists goes only while the job does: its removal deletes the
        // key, and a newer add may create it again at the version read
        const deleted = await deleteAll(
          store,
          due.map((k): ProtocolOp[] => [
            { op: 'delete', path: k.path, version: k.version },
            ...(gone.has(k.job) ? [] : [keptJobCheckOp(layout, k.job)]),
            dedupGenerationBumpOp(layout),
          ]),
          fence,
        );
        swept += deleted;
        kept -= deleted;
      }
      return { deleted: swept, kept };
    },
    dropEmpty: async (dir) => {
      await deleteAll(store, [[{ op: 'delete', path: dir }]], fence);
    },
  });
}

/** The keys named `names` in `dir` as read now (unreadable data: a key of no job, without ttl). */
async function readKeys(store: ProtocolContext, dir: string, names: string[]): Promise<SeenKey[]> {
  const read = await Promise.all(
    names.map(async (name): Promise<SeenKey | undefined> => {
      const path = `${dir}/${name}`;
      try {
        const { data, stat } = await store.session.getData(path);
        const { job, ttl } = parseKey(data);
        return { name, path, version: stat.version, mtime: stat.mtime, job, ttl };
      } catch (err) {
        if (err instanceof NoNodeError) return undefined;
        throw err;
      }
    }),
  );
  return read.filter((k): k is SeenKey => k !== undefined);
}

function parseKey(data: Buffer): { job: string; ttl: number | undefined } {
  try {
    const parsed = JSON.parse(data.toString()) as { job?: unknown; ttl?: unknown } | null;
    const job = typeof parsed?.job === 'string' ? parsed.job : '';
    const ttl = typeof parsed?.ttl === 'number' && parsed.ttl > 0 ? parsed.ttl : undefined;
    return { job, ttl };
  } catch {
    return { job: '', ttl: undefined };
  }
}

/** Which of `ids` have no record (a listing of each record node: its reply is a few bytes). */
async function goneJobs(store: ProtocolContext, ids: string[]): Promise<Set<string>> {
  const gone = new Set<string>(ids.filter((id) => id === '' || id.includes('/')));
  const named = [...new Set(ids.filter((id) => !gone.has(id)))];
  if (named.length === 0) return gone;
  const replies = await store.session.readMulti(
    named.map((id) => ({ op: 'getChildren' as const, path: store.layout.job(id) })),
  );
  named.forEach((id, i) => {
    const r = replies[i];
    if (r && !r.ok && r.error instanceof NoNodeError) gone.add(id);
  });
  return gone;
}

/**
 * Sends each delete (with its checks) as a unit of its own (one that conflicts fails alone); resolves with how
 * many went through. With a receipt: a key made again by a newer add is back at the version read, so a delete
 * sent again after a lost reply would take it.
 */
async function deleteAll(store: ProtocolContext, deletes: ProtocolOp[][], fence?: () => ProtocolOp[]): Promise<number> {
  if (deletes.length === 0) return 0;
  const units: TxUnit[] = deletes.map((ops) => ({ build: () => ({ ops }) }));
  const results = await store.executor.run(units, fence ? { fence } : {});
  return results.filter((r) => r.ok).length;
}
