/**
 * The head of the queue, as a worker reads it: the first claimable ready
 * pointers in serving order (lifo lane first, then by priority), read with
 * the claims in one request, and a ready pointer left without its record
 * dropped. Called by the JobSource.
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import { sortBySequence } from '../../zk/sequence.js';
import type { Watcher } from '../../zk/types.js';
import { idOfPointer, LIFO_LANE } from '../layout.js';
import { orphanPointerOps } from './builders.js';
import { type Candidate, PLAIN_LANE } from './claim.js';
import type { ProtocolContext } from './context.js';
import { removeIfEmpty, sortBuckets, sortLanes } from './walks.js';

export interface ScanOptions {
  /** Most candidates to return. */
  limit: number;
  /** Job ids to leave out (active claims, jobs in hand). */
  exclude: ReadonlySet<string>;
  /** Watch every listing: fires when anything at the head changes (used when idle). */
  watch?: Watcher;
  /** Listings already read (path -> names), taken instead of listing again. */
  read?: ReadonlyMap<string, string[]>;
  /** Collects the paths the scan listed (or took from `read`), in order. */
  listed?: string[];
}

/**
 * The first `limit` claimable candidates, in serving order. Only the first
 * non-empty buckets are listed; empty buckets are removed on the way (but
 * the plain lane's tail), and so are lanes left empty.
 */
export async function scanHead(store: ProtocolContext, o: ScanOptions): Promise<Candidate[]> {
  const { layout } = store;
  const out: Candidate[] = [];
  // A listing read before is taken only below one read with it: a parent listed later may
  // name a child made since (a bucket re-created), which only a later listing shows.
  const list = async (path: string, parentRead: boolean) => {
    o.listed?.push(path);
    const known = parentRead && !o.watch ? o.read?.get(path) : undefined;
    return { names: known ?? (await store.children(path, o.watch)), read: known !== undefined };
  };
  const ready = await list(layout.ready, true);
  for (const lane of sortLanes(ready.names)) {
    const lifo = lane === LIFO_LANE;
    const container = layout.lane(lane);
    const laneList = await list(container, ready.read);
    const buckets = sortBuckets(laneList.names, lifo);
    const tail = lifo ? buckets[0] : buckets[buckets.length - 1];
    let emptied = 0;
    for (const bucket of buckets) {
      const path = `${container}/${bucket}`;
      const { names } = await list(path, laneList.read);
      if (names.length === 0) {
        if (bucket !== tail || lane !== PLAIN_LANE) {
          void removeIfEmpty(store, path).catch(() => undefined);
          emptied++;
        }
        continue;
      }
      for (const name of sortBySequence(names, undefined, lifo)) {
        const id = idOfPointer(name);
        if (o.exclude.has(id)) continue;
        out.push({ id, pointer: `${path}/${name}`, lane });
        if (out.length >= o.limit) return out;
      }
    }
    if (emptied === buckets.length && lane !== PLAIN_LANE) void removeIfEmpty(store, container).catch(() => undefined);
  }
  return out;
}

/** Most listings a look ahead reads in its one request (bounded: each is at most a bucket). */
export const AHEAD_LISTINGS = 6;

/** A scan of the head with the claims, and the listings to read ahead next time. */
export interface HeadLook {
  candidates: Candidate[];
  /** Every listing this scan made (pass them back as `ahead`). */
  listed: string[];
}

/**
 * Scans the head, leaving out the jobs claimed now, with the listings of the
 * previous scan (`ahead`) read in the same request as the claims (one
 * read-only multi): the head's shape (lanes, buckets) rarely changes between
 * two looks, so one round trip replaces a chain of them; only a listing the
 * previous scan did not make (a new lane or bucket) is read after it. A
 * listing read ahead is as good as one read during the walk: every claim is
 * fenced by its own transaction (the pointer checked, the claim created).
 */
export async function lookAtHead(
  store: ProtocolContext,
  o: { limit: number; exclude: Iterable<string>; ahead?: readonly string[] },
): Promise<HeadLook> {
  const { claimsDir } = store.layout;
  const paths = [claimsDir, ...(o.ahead ?? []).filter((p) => p !== claimsDir).slice(0, AHEAD_LISTINGS)];
  const replies = await store.session.readMulti(paths.map((path) => ({ op: 'getChildren' as const, path })));
  const read = new Map<string, string[]>();
  replies.forEach((r, i) => {
    const path = paths[i] as string;
    if (r.ok) read.set(path, r.children);
    else if (r.error instanceof NoNodeError) read.set(path, []);
    else throw r.error;
  });
  const exclude = new Set([...(read.get(claimsDir) ?? []), ...o.exclude]);
  const listed: string[] = [];
  const candidates = await scanHead(store, { limit: o.limit, exclude, read, listed });
  return { candidates, listed };
}

/**
 * Deletes a ready pointer whose record is gone, only while it still is, or
 * (`recordVersion`) one left beside a record no ready pointer goes with, only
 * while that record is at that version (see orphanPointerOps). Resolves 'dropped'; 'job' when a record is there (work
 * to do); 'gone' when the pointer went meanwhile (or the record's shard).
 */
export async function dropOrphanPointer(
  store: ProtocolContext,
  c: Candidate,
  recordVersion?: number,
): Promise<'dropped' | 'job' | 'gone'> {
  const ops = orphanPointerOps(store.layout, c, recordVersion);
  // safe to send twice: once applied, the pointer's delete fails and nothing is applied again
  const [result] = await store.executor.run([{ build: () => ({ ops }) }], { receipt: false });
  if (result?.ok) return 'dropped';
  if (!result || result.ok) return 'gone';
  // a record there (or, for a left-behind pointer, its record changed or gone): look at it again
  const atRecord = result.op?.path === store.layout.job(c.id);
  return result.error instanceof NodeExistsError || atRecord ? 'job' : 'gone';
}
