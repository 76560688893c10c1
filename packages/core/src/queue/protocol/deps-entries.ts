/**
 * A parent's dependency entries, wherever they lie: in the buckets of its
 * node (`b-<xx>/<k>-<queue>:<id>`, the bucket a hash of the child's key), or
 * right under the node for one written before buckets. Every read here is
 * paged under the packet limit, whatever the number of children: a listing
 * of the node (at most DEP_BUCKETS buckets, besides old entries), then the
 * buckets' listings a page at a time, sized by the first one's reply.
 */
import { NoNodeError } from '../../zk/errors.js';
import { MULTI_BYTE_LIMIT, type ReadOp, type ReadResult, readOpBytes, type Session } from '../../zk/session.js';
import { type ChildKey, type DepKind, isDepBucket, parseDepEntry } from '../layout.js';
import type { ProtocolContext } from './context.js';

/** Most reads of one paged readMulti (their replies are small: listings of childless nodes, flags). */
const READS_PER_PAGE = 500;
/** Share of the packet limit one page of listings may fill. */
const REPLY_BUDGET = Math.floor(MULTI_BYTE_LIMIT / 2);

/**
 * `session.readMulti` of any number of reads, a page at a time: each
 * request at most READS_PER_PAGE reads and half the packet limit, so
 * neither a request nor the reply of small nodes passes it. Results in order.
 */
export async function readPaged(session: Session, reads: readonly ReadOp[], perPage = READS_PER_PAGE) {
  const out: ReadResult[] = [];
  let from = 0;
  while (from < reads.length) {
    let bytes = 0;
    let to = from;
    while (to < reads.length && to - from < perPage) {
      bytes += readOpBytes(reads[to] as ReadOp, session.namespace);
      if (bytes > REPLY_BUDGET && to > from) break;
      to++;
    }
    out.push(...((await session.readMulti(reads.slice(from, to))) as ReadResult[]));
    from = to;
  }
  return out;
}

/** One dependency entry: its kind, child, and path (in its bucket, or right under the node). */
export interface DepEntry {
  kind: DepKind;
  child: ChildKey;
  name: string;
  path: string;
}

/** Bytes a listing's reply spends per name besides the name itself. */
const NAME_OVERHEAD = 4;

/**
 * A parent's dependency entries (none without a node), and its buckets'
 * paths. The node's listing first, then the buckets', a page at a time.
 */
export async function listDepEntries(
  store: ProtocolContext,
  id: string,
): Promise<{ entries: DepEntry[]; buckets: string[]; exists: boolean }> {
  const base = store.layout.deps(id);
  let top: string[];
  try {
    top = await store.session.getChildren(base);
  } catch (err) {
    if (err instanceof NoNodeError) return { entries: [], buckets: [], exists: false };
    throw err;
  }
  const entries: DepEntry[] = [];
  const add = (dir: string, names: readonly string[]) => {
    for (const name of names) {
      const e = parseDepEntry(name);
      if (e) entries.push({ ...e, name, path: `${dir}/${name}` });
    }
  };
  add(base, top);
  const buckets = top.filter(isDepBucket).map((b) => `${base}/${b}`);
  let perPage = 1;
  for (let i = 0; i < buckets.length; ) {
    const page = buckets.slice(i, i + perPage);
    const replies = await store.session.readMulti(page.map((path) => ({ op: 'getChildren' as const, path })));
    let bytes = 0;
    replies.forEach((r, j) => {
      if (!r.ok) {
        if (r.error instanceof NoNodeError) return; // removed meanwhile (the node goes)
        throw r.error;
      }
      add(page[j] as string, r.children);
      for (const n of r.children) bytes += n.length + NAME_OVERHEAD;
    });
    i += page.length;
    // the next page as many buckets as fit the budget, were they as full as these (buckets fill evenly)
    perPage = Math.max(1, Math.min(DEP_PAGE_MAX, Math.floor(REPLY_BUDGET / Math.max(1, bytes / page.length) / 2)));
  }
  return { entries, buckets, exists: true };
}

/** Most buckets listed in one request. */
const DEP_PAGE_MAX = 64;

/**
 * Paths of a parent's dependency node, deepest first (entries, buckets, the
 * node), for its deletion; none without one. Given `most`, a node of more
 * paths is not listed (undefined): its buckets' sizes are read from their
 * stats, so a parent of 100,000 children costs two small reads to learn it.
 */
export async function depsTree(store: ProtocolContext, id: string, most?: number): Promise<string[] | undefined> {
  if (most !== undefined) {
    const base = store.layout.deps(id);
    let top: string[];
    try {
      top = await store.session.getChildren(base);
    } catch (err) {
      if (err instanceof NoNodeError) return [];
      throw err;
    }
    const buckets = top.filter(isDepBucket);
    const stats = await readPaged(
      store.session,
      buckets.map((b) => ({ op: 'getData' as const, path: `${base}/${b}` })),
    );
    const inside = stats.reduce((n, r) => n + (r.ok && 'stat' in r ? r.stat.numChildren : 0), 0);
    if (top.length + inside + 1 > most) return undefined;
  }
  const { entries, buckets, exists } = await listDepEntries(store, id);
  if (!exists) return [];
  return [...entries.map((e) => e.path), ...buckets, store.layout.deps(id)];
}
