/**
 * A parent's dependencies as zkq's Job reports them (BullMQ's getters):
 * children named by BullMQ's keys `<prefix>:<queue>:<id>`, the prefix being
 * the namespace every queue of a flow lives in. Reads only; the protocol's
 * flow-read.ts reads them.
 */
import type { ChildKey } from './layout.js';
import { dependencyCounts, getDependencies } from './protocol/flow-read.js';
import type { ParentLink } from './record.js';
import type { QueueStore } from './store.js';
import type { DependenciesOpts, DependencyOpts, ParentKeys } from './types.js';

/** Entries of a page when `count` is not given (BullMQ's). */
const DEFAULT_PAGE = 20;

/** The key prefix of a store's queues: its namespace, `zkq` for `/zkq`. */
export function keyPrefix(store: QueueStore): string {
  return store.session.namespace.replace(/^\//, '');
}

/** A job's key as BullMQ names it: `<prefix>:<queue>:<id>`. */
export function jobKey(store: QueueStore, c: ChildKey): string {
  return `${keyPrefix(store)}:${c.queue}:${c.id}`;
}

/**
 * Whether `child` is still a pending dependency of the parent `parentId`:
 * its unprocessed entry is in its bucket, or right under a node written
 * before buckets.
 */
export async function isPendingChild(store: QueueStore, parentId: string, child: ChildKey): Promise<boolean> {
  const at = [store.layout.depEntry(parentId, 'u', child), store.layout.legacyDepEntry(parentId, 'u', child)];
  return (await Promise.all(at.map((p) => store.session.exists(p)))).some((s) => s !== null);
}

/** BullMQ's `parentKey` and `parent` of a child, from its link. */
export function parentKeys(store: QueueStore, link: ParentLink): { parentKey: string; parent: ParentKeys } {
  return parentKeysIn(keyPrefix(store), link);
}

/** BullMQ's `parentKey` and `parent` of a child, its parent's queue under key prefix `prefix`. */
export function parentKeysIn(prefix: string, link: ParentLink): { parentKey: string; parent: ParentKeys } {
  const queueKey = `${prefix}:${link.queue}`;
  const parent: ParentKeys = { id: link.id, queueKey };
  for (const k of ['fpof', 'rdof', 'idof', 'cpof'] as const) if (link[k]) parent[k] = true;
  return { parentKey: `${queueKey}:${link.id}`, parent };
}

/** BullMQ's answer to getDependencies: whole lists, or pages of those asked for with the next cursor (0: none). */
export interface JobDependencies {
  /** Processed children's return values (values, not JSON strings), by key. */
  processed?: Record<string, unknown>;
  unprocessed?: string[];
  /** Ignored children's failure reasons, by key. */
  ignored?: Record<string, string>;
  failed?: string[];
  nextProcessedCursor?: number;
  nextUnprocessedCursor?: number;
  nextIgnoredCursor?: number;
  nextFailedCursor?: number;
}

function page<T>(all: readonly T[], p: DependencyOpts): { items: T[]; next: number } {
  const from = p.cursor ?? 0;
  const to = from + (p.count ?? DEFAULT_PAGE);
  return { items: all.slice(from, to), next: to < all.length ? to : 0 };
}

/** Job `id`'s dependencies by standing. */
export async function readJobDependencies(
  store: QueueStore,
  id: string,
  opts: DependenciesOpts = {},
): Promise<JobDependencies> {
  const deps = await getDependencies(store, id);
  const key = (c: ChildKey) => jobKey(store, c);
  const lists = {
    processed: deps.processed.map((p) => [key(p.child), p.value] as const),
    unprocessed: deps.unprocessed.map(key),
    ignored: deps.ignored.map((i) => [key(i.child), i.reason] as const),
    failed: deps.failed.map((f) => key(f.child)),
  };
  if (!opts.processed && !opts.unprocessed && !opts.ignored && !opts.failed) {
    return {
      processed: Object.fromEntries(lists.processed),
      unprocessed: lists.unprocessed,
      ignored: Object.fromEntries(lists.ignored),
      failed: lists.failed,
    };
  }
  const out: JobDependencies = {};
  if (opts.processed) {
    const { items, next } = page(lists.processed, opts.processed);
    out.processed = Object.fromEntries(items);
    out.nextProcessedCursor = next;
  }
  if (opts.unprocessed) {
    const { items, next } = page(lists.unprocessed, opts.unprocessed);
    out.unprocessed = items;
    out.nextUnprocessedCursor = next;
  }
  if (opts.ignored) {
    const { items, next } = page(lists.ignored, opts.ignored);
    out.ignored = Object.fromEntries(items);
    out.nextIgnoredCursor = next;
  }
  if (opts.failed) {
    const { items, next } = page(lists.failed, opts.failed);
    out.failed = items;
    out.nextFailedCursor = next;
  }
  return out;
}

export type DependencyKind = 'processed' | 'unprocessed' | 'ignored' | 'failed';

/** Counts of job `id`'s dependencies of the kinds asked for (all when none is). */
export async function countJobDependencies(
  store: QueueStore,
  id: string,
  opts: Partial<Record<DependencyKind, boolean>> = {},
): Promise<Partial<Record<DependencyKind, number>>> {
  const counts = await dependencyCounts(store, id);
  const asked = (Object.keys(counts) as DependencyKind[]).filter((k) => opts[k]);
  const kinds = asked.length > 0 ? asked : (Object.keys(counts) as DependencyKind[]);
  return Object.fromEntries(kinds.map((k) => [k, counts[k]]));
}
