/**
 * A flow's reads as BullMQ shows them: a parent's dependencies (whole, by
 * page, counted), its children's values and ignored failures, and
 * Queue.getDependencies' pages with the children's jobs. Children are named
 * by BullMQ's key `<prefix>:<queue>:<id>`.
 */
import {
  type ChildKey,
  decodeRecord,
  dependencyCounts,
  type QueueStore,
  getDependencies as readDependencies,
  readJobDependencies,
} from '@zkq/core/internal';
import type { JobJson } from 'bullmq';
import type { BackendContext } from './context.js';
import { bullKey } from './flows.js';
import { toJobJson } from './json.js';

type Page = { cursor?: number; count?: number };

/**
 * BullMQ's getDependencies: all four lists, or pages of those asked for
 * (cursor: an offset), as zkq's Job reads them (keys `<prefix>:<queue>:<id>`,
 * the prefix being the namespace, which is this backend's prefix).
 */
export async function getDependencies(
  ctx: BackendContext,
  jobId: string,
  opts: { processed?: Page; unprocessed?: Page; ignored?: Page; failed?: Page },
): Promise<Record<string, unknown>> {
  return { ...(await readJobDependencies(await ctx.store(), jobId, opts)) };
}

/** BullMQ's getDependencyCounts, in the order of `types`. */
export async function getDependencyCounts(ctx: BackendContext, jobId: string, types: string[]): Promise<number[]> {
  const counts = await dependencyCounts(await ctx.store(), jobId);
  return types.map((t) => counts[t as keyof typeof counts] ?? 0);
}

/** A page of Queue.getDependencies: BullMQ's `paginate` of `<job>:dependencies` or `<job>:processed`. */
export interface DependencyPage {
  cursor: string;
  items: { id: string; v?: unknown }[];
  total: number;
  jobs?: JobJson[];
}

/**
 * The page `start..end` (end -1: to the last) of a parent's pending or
 * processed children, in entry order, with the children's jobs when asked
 * (a child removed since has none). Undefined for a key that names no
 * parent's children (BullMQ paginates only those).
 */
export async function paginateDependencies(
  ctx: BackendContext,
  key: string,
  opts: { start: number; end: number; fetchJobs?: boolean },
): Promise<DependencyPage | undefined> {
  const base = `${ctx.prefix}:${ctx.name}:`;
  const m = key.startsWith(base) ? /^(.+):(dependencies|processed)$/.exec(key.slice(base.length)) : null;
  if (!m) return undefined;
  const [, jobId = '', type] = m;
  const store = await ctx.store();
  const deps = await readDependencies(store, jobId);
  const all =
    type === 'processed'
      ? deps.processed.map((p) => ({ child: p.child, item: { id: bullKey(ctx, p.child), v: p.value } }))
      : deps.unprocessed.map((c) => ({ child: c, item: { id: bullKey(ctx, c) } }));
  const end = opts.end < 0 ? all.length : opts.end + 1;
  const page = all.slice(Math.max(0, opts.start), end);
  const out: DependencyPage = { cursor: '0', items: page.map((p) => p.item), total: all.length };
  if (opts.fetchJobs)
    out.jobs = await childJobs(
      ctx,
      store,
      page.map((p) => p.child),
    );
  return out;
}

/** The children's jobs as BullMQ's JobJson, read in one request; gone ones are left out. */
async function childJobs(ctx: BackendContext, store: QueueStore, children: ChildKey[]): Promise<JobJson[]> {
  if (children.length === 0) return [];
  const paths = children.map((c) => store.sibling(c.queue).layout.job(c.id));
  const replies = await store.session.readMulti(paths.map((path) => ({ op: 'getData' as const, path })));
  return replies.flatMap((r, i) => (r.ok ? [toJobJson(decodeRecord(r.data, paths[i] as string), ctx.prefix)] : []));
}

/** The processed children's return values (JSON), by child key. */
export async function getProcessedChildrenValues(ctx: BackendContext, jobId: string): Promise<Record<string, string>> {
  const deps = await readDependencies(await ctx.store(), jobId);
  return Object.fromEntries(deps.processed.map((p) => [bullKey(ctx, p.child), JSON.stringify(p.value)]));
}

/** The ignored children's failure reasons, by child key. */
export async function getIgnoredChildrenFailures(ctx: BackendContext, jobId: string): Promise<Record<string, string>> {
  const deps = await readDependencies(await ctx.store(), jobId);
  return Object.fromEntries(deps.ignored.map((p) => [bullKey(ctx, p.child), p.reason]));
}
