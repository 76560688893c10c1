/**
 * The paged pass over a sharded directory (`<root>/<shard>/<name>`) that the
 * leader's sweeps share (dedup keys, log nodes): a few shards a pass, from
 * where the last pass ended, each listed only when its listing fits in a
 * reply (its stat's child count), so a pass is bounded whatever the number
 * of nodes. What a shard's nodes are judged by is the sweep's own.
 */
import type { ProtocolContext } from './context.js';

/** What a pass of a sweep did. */
export interface ShardSweep {
  /** Nodes deleted. */
  deleted: number;
  /** Shards too large to list this time (paths). */
  crowded: string[];
  /** The shard the next pass starts at (undefined: from the first again). */
  next?: string;
}

/** Which shards a pass sweeps: `shards` of them from `from` on (default: all). */
export interface ShardSweepRange {
  from?: string;
  shards?: number;
}

/** How a sweep judges one shard's nodes, and what it does with a shard it left empty. */
export interface ShardSweeper {
  /** The most children a shard may have to be listed (more: `crowded`, left for a later pass). */
  listingMax: number;
  /** Sweeps the nodes `names` of shard `dir`: resolves with how many it deleted and how many are left. */
  sweep(dir: string, names: string[]): Promise<{ deleted: number; kept: number }>;
  /** Removes shard `dir`, left empty by its sweep. */
  dropEmpty(dir: string): Promise<void>;
}

/** Sweeps the shards of `root` in `range` (sorted by name) with `sweeper`. */
export async function sweepShards(
  store: ProtocolContext,
  root: string,
  range: ShardSweepRange,
  sweeper: ShardSweeper,
): Promise<ShardSweep> {
  const out: ShardSweep = { deleted: 0, crowded: [] };
  const all = (await store.children(root)).sort();
  const from = range.from;
  const start = from === undefined ? 0 : all.findIndex((s) => s >= from);
  const shards = start < 0 ? [] : all.slice(start, start + (range.shards ?? all.length));
  const after = all[start + shards.length];
  if (start >= 0 && after !== undefined) out.next = after;
  for (const shard of shards) {
    const dir = `${root}/${shard}`;
    const stat = await store.session.exists(dir);
    if (!stat) continue;
    if (stat.numChildren > sweeper.listingMax) {
      out.crowded.push(dir);
      continue;
    }
    const { deleted, kept } = await sweeper.sweep(dir, await store.children(dir));
    out.deleted += deleted;
    if (kept === 0) await sweeper.dropEmpty(dir);
  }
  return out;
}
