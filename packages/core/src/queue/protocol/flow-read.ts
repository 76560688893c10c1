/**
 * Reading a parent's dependencies: counts by standing, the children with
 * their values and reasons, the node itself. Nothing here writes.
 */

import { NoNodeError } from '../../zk/errors.js';
import type { ChildKey, DepKind } from '../layout.js';
import type { ProtocolContext } from './context.js';
import { listDepEntries } from './deps-entries.js';
import type { DepsNode } from './flow-parent.js';

/** A parent's dependencies, by standing. */
export interface Dependencies {
  processed: { child: ChildKey; value: unknown }[];
  unprocessed: ChildKey[];
  ignored: { child: ChildKey; reason: string }[];
  failed: { child: ChildKey; reason: string }[];
}

/**
 * A parent's dependency entries (none without a node, or with an earlier
 * job's of this id: see ParentRead's `stale`), from its buckets and, for an
 * older node, from under it.
 */
async function entries(store: ProtocolContext, id: string) {
  const [deps, rec] = await store.session.readMulti([
    { op: 'getData', path: store.layout.deps(id) },
    { op: 'getData', path: store.layout.job(id) },
  ]);
  if (deps?.ok && rec?.ok && deps.stat.czxid < rec.stat.czxid) return [];
  return (await listDepEntries(store, id)).entries;
}

/** Counts of a parent's dependencies by standing. */
export async function dependencyCounts(
  store: ProtocolContext,
  id: string,
): Promise<{ processed: number; unprocessed: number; ignored: number; failed: number }> {
  const counts = { processed: 0, unprocessed: 0, ignored: 0, failed: 0 };
  const names: Record<DepKind, keyof typeof counts> = { p: 'processed', u: 'unprocessed', i: 'ignored', f: 'failed' };
  for (const e of await entries(store, id)) counts[names[e.kind]]++;
  return counts;
}

/** Dependency entries read at once. */
const DEPS_READ = 100;

/** A parent's dependencies, with the values of processed children and the reasons of the others. */
export async function getDependencies(store: ProtocolContext, id: string): Promise<Dependencies> {
  const out: Dependencies = { processed: [], unprocessed: [], ignored: [], failed: [] };
  const list = (await entries(store, id)).sort((a, b) => a.name.localeCompare(b.name));
  const withData = list.filter((e) => e.kind !== 'u');
  for (const e of list) if (e.kind === 'u') out.unprocessed.push(e.child);
  for (let i = 0; i < withData.length; i += DEPS_READ) {
    const batch = withData.slice(i, i + DEPS_READ);
    const replies = await store.session.readMulti(batch.map((e) => ({ op: 'getData' as const, path: e.path })));
    batch.forEach((e, j) => {
      const reply = replies[j];
      if (!reply?.ok) return; // moved meanwhile
      const text = reply.data.toString();
      if (e.kind === 'p') out.processed.push({ child: e.child, value: text ? JSON.parse(text) : null });
      else if (e.kind === 'i') out.ignored.push({ child: e.child, reason: text });
      else out.failed.push({ child: e.child, reason: text });
    });
  }
  return out;
}

/** A parent's dependency node, or undefined without one. */
export async function readDeps(store: ProtocolContext, id: string): Promise<DepsNode | undefined> {
  try {
    const { data } = await store.session.getData(store.layout.deps(id));
    return JSON.parse(data.toString()) as DepsNode;
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}
