/**
 * The share of a flow that a parent outside it gets (or an existing parent
 * named in it): its node counted up by its new pending children at the
 * version read, the buckets they need and their entries.
 */

import { MissingParentError } from '../errors.js';
import type { ProtocolContext } from './context.js';
import { readPaged } from './deps-entries.js';
import type { Built, ProtocolOp } from './executor.js';
import { bucketsOf, childKey, type DepsNode, depsData, entryPaths, readParent } from './flow-parent.js';
import type { ParentShare } from './flow-plan.js';
import { readDeps } from './flow-read.js';
import { dropStaleDeps } from './flow-sweep.js';

const EMPTY = Buffer.alloc(0);

/**
 * An existing parent's share: its node counted up by its new pending
 * children at the version read, the buckets they need and their entries
 * (an existing child already among them is left as it is), and a check
 * that the parent is where it was read. Throws MissingParentError when it
 * does not exist.
 */
export async function existingParentShare(
  store: ProtocolContext,
  sh: ParentShare,
  memo: ShareMemo = {},
): Promise<Built> {
  const { link } = sh;
  const ps = store.sibling(link.queue);
  const path = ps.layout.deps(link.id);
  // an earlier job's node under this id (a parent trimmed without it) goes before anything is read of it
  if (!memo.kids && (await readParent(store, link)).stale) await dropStaleDeps(ps, link.id);
  // which children are new to it: read once per plan (many reads for many children), before the
  // node's version, so that a sibling's finish between the two costs a read, not all of them again
  memo.kids ??= await newKids(ps, sh);
  const kids = memo.kids;
  const have = new Set((await ps.children(path)).map((b) => `${path}/${b}`));
  const read = await readParent(store, link);
  if (!read.parent) throw new MissingParentError(childKey(link));
  if (kids.length === 0) return { ops: [] };
  await ps.ensureDir(ps.layout.depsShard(link.id));
  const next: DepsNode = { ...(read.deps?.node ?? { pending: 0, bucketed: true }) };
  next.pending += kids.filter((k) => k.kind === 'u').length;
  const ops: ProtocolOp[] = [
    read.deps
      ? { op: 'setData', path, data: depsData(next), version: read.deps.version, role: 'reread' }
      : { op: 'create', path, data: depsData(next), role: 'reread' },
    // the parent is still where it was read (a parent released or removed meanwhile is read again)
    { op: 'check', path: ps.layout.job(link.id), version: read.parent.version, role: 'reread' },
    ...bucketsOf(ps, link.id, kids)
      .filter((b) => !have.has(b))
      .map((b): ProtocolOp => ({ op: 'create', path: b, data: EMPTY, role: 'reread' })),
    ...kids.map(
      (k): ProtocolOp => ({ op: 'create', path: ps.layout.depEntry(link.id, k.kind, k.child), data: k.data }),
    ),
  ];
  return { ops };
}

/** What a parent's share keeps between its builds: the children found new to it. */
export interface ShareMemo {
  kids?: ParentShare['kids'];
}

/** The children of `sh` that have no entry in the parent's node yet (in a bucket, or under an older node). */
async function newKids(ps: ProtocolContext, sh: ParentShare): Promise<ParentShare['kids']> {
  const { link } = sh;
  const node = await readDeps(ps, link.id);
  const where = sh.kids.map((k) => entryPaths(ps.layout, link.id, k.child, node));
  const present = await readPaged(
    ps.session,
    where.flat().map((e) => ({ op: 'getChildren' as const, path: e.path })),
  );
  const starts: number[] = [];
  where.reduce((n, w) => starts.push(n) && n + w.length, 0);
  return sh.kids.filter((_, i) => {
    const from = starts[i] as number;
    return !present.slice(from, from + (where[i] as unknown[]).length).some((p) => p.ok);
  });
}
