/**
 * A child's standing settled with its parent (see flow-parent.ts): done
 * for good in its finish (the last one releases the parent), pending again
 * as it is retried, and the parent's own park in waiting-children. Each
 * returns ops for the caller's transaction: finish.ts, the retry of
 * control.ts, and flow-add-split.ts for a parent a cut-off add left waiting.
 */

import { FailedChildrenError, NoPendingChildrenError } from '../errors.js';
import type { ChildKey, DepKind } from '../layout.js';
import { encodeRecord, type JobRecord } from '../record.js';
import { unclaimedOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { Built, ProtocolOp } from './executor.js';
import {
  childKey,
  type DepsNode,
  depsData,
  entryBeside,
  entryPaths,
  joinBuilt,
  readParent,
  releaseParent,
  type Settlement,
  share,
} from './flow-parent.js';

const EMPTY = Buffer.alloc(0);

/**
 * The ops that fail a parent a flow add cut off midway left waiting for
 * children that will never come (see flow-add-split.ts): it leaves
 * waiting-children with a deferred failure, so it fails at its next claim
 * without running. None unless it waits for children.
 */
export async function failHeldParentOps(
  store: ProtocolContext,
  parent: ChildKey,
  reason: string,
): Promise<Built | undefined> {
  const ps = store.sibling(parent.queue);
  const stored = await ps.getJob(parent.id);
  if (stored?.record.state !== 'waiting-children') return undefined;
  return share(store, ps, await releaseParent(ps, stored, reason));
}

/**
 * The ops that record a child's final outcome in its parent's dependencies,
 * releasing the parent when that was the last pending child (or the child's
 * failure policy says to go on now), for the child's finish transaction.
 * None when the child is no longer a pending dependency, or the policy
 * leaves a failure pending (BullMQ's default: the parent waits, unless the
 * child is deleted as it fails, which no retry could then bring back). Written at
 * the versions read, role `reread`: a sibling first makes the unit build again.
 */
export async function settleChildOps(
  store: ProtocolContext,
  child: JobRecord,
  s: Settlement,
  /** The child is deleted as it finishes: a failure that would stay pending takes it out instead (BullMQ's). */
  removed = false,
): Promise<Built | undefined> {
  const link = child.parentLink;
  if (!link) return undefined;
  const me: ChildKey = { queue: store.queue, id: child.id };
  let kind: DepKind | undefined;
  let data = EMPTY;
  let go = false; // release the parent whatever is pending
  let failed: string | undefined;
  if (s.kind === 'processed') {
    kind = 'p';
    data = Buffer.from(JSON.stringify(s.value ?? null));
  } else if (link.fpof) {
    kind = 'f';
    data = Buffer.from(s.reason);
    // BullMQ's reason names the child by its full key, `<prefix>:<queue>:<id>`
    failed = `child ${store.session.namespace.replace(/^\//, '')}:${childKey(me)} failed`;
    go = true;
  } else if (link.cpof || link.idof) {
    kind = 'i';
    data = Buffer.from(s.reason);
    go = link.cpof === true;
  } else if (!link.rdof && !removed) return undefined; // a plain failure stays pending: the parent waits
  const read = await readParent(store, link, me);
  if (!read.deps || !read.pending) return undefined;
  const ps = read.store;
  const node: DepsNode = { ...read.deps.node, pending: Math.max(0, read.deps.node.pending - 1) };
  if (failed && !node.failed) node.failed = failed;
  const ops: ProtocolOp[] = [
    { op: 'setData', path: ps.layout.deps(link.id), data: depsData(node), version: read.deps.version, role: 'reread' },
    { op: 'delete', path: read.pending, role: 'reread' },
  ];
  // the entry stays where it was (its bucket, or right under an older node)
  if (kind) ops.push({ op: 'create', path: entryBeside(read.pending, kind, me), data });
  const parent = read.parent;
  if (parent?.record.state === 'waiting-children' && (go || node.pending === 0)) {
    return joinBuilt({ ops }, share(store, ps, await releaseParent(ps, parent, failed)));
  }
  if (failed && parent && (parent.record.state === 'waiting' || parent.record.state === 'delayed')) {
    // not running yet: it fails at its claim (an active parent finds `failed` when it parks)
    const record = encodeRecord({ ...parent.record, deferredFailure: failed });
    ops.push({ op: 'setData', path: ps.layout.job(link.id), data: record, version: parent.version, role: 'reread' });
    // only while no claim is there: a parent claimed since the read is built again, as running
    const [create, drop] = unclaimedOps(ps.layout, link.id) as [ProtocolOp, ProtocolOp];
    ops.push({ ...create, role: 'reread' }, drop);
  }
  return { ops };
}

/**
 * The ops that make a finished child pending again for its parent, as it is
 * retried (BullMQ's): its processed, ignored or failed entry becomes
 * unprocessed and the count goes up, at the version read (role `reread`:
 * build the unit inside `build()`, so a sibling first makes it read again).
 * The parent's record is not written: a parent still waiting for children
 * waits for this one too. None when the child is pending already, was taken
 * out of the dependencies (removeDependencyOnFailure), or the parent's node
 * is gone.
 */
export async function rependOps(store: ProtocolContext, child: JobRecord): Promise<ProtocolOp[]> {
  const link = child.parentLink;
  if (!link) return [];
  const me: ChildKey = { queue: store.queue, id: child.id };
  const read = await readParent(store, link, me);
  if (!read.deps || read.pending) return [];
  const { layout } = read.store;
  const paths = entryPaths(layout, link.id, me, read.deps.node);
  const found = await store.session.readMulti(paths.map((p) => ({ op: 'getData' as const, path: p.path })));
  const at = paths.find((p, i) => p.kind !== 'u' && found[i]?.ok);
  if (!at) return [];
  const node: DepsNode = { ...read.deps.node, pending: read.deps.node.pending + 1 };
  if (at.kind === 'f' && node.failed?.endsWith(`:${childKey(me)} failed`)) delete node.failed;
  return [
    { op: 'setData', path: layout.deps(link.id), data: depsData(node), version: read.deps.version, role: 'reread' },
    { op: 'delete', path: at.path, role: 'reread' },
    { op: 'create', path: entryBeside(at.path, 'u', me), data: EMPTY, role: 'reread' },
  ];
}

/**
 * The share of a parent parking itself in waiting-children (moveToWaitingChildren):
 * its dependency node rewritten at the version read, so that a child
 * finishing meanwhile re-reads and sees it parked. Throws
 * NoPendingChildrenError when nothing is pending (the parent goes on), and
 * FailedChildrenError when a child failed it.
 */
export async function parkShare(store: ProtocolContext, id: string): Promise<ProtocolOp[]> {
  const read = await readParent(store, { queue: store.queue, id });
  if (read.deps?.node.failed) throw new FailedChildrenError(id, read.deps.node.failed);
  if (!read.deps || read.deps.node.pending === 0) throw new NoPendingChildrenError(id);
  return [
    {
      op: 'setData',
      path: store.layout.deps(id),
      data: depsData(read.deps.node),
      version: read.deps.version,
      role: 'reread',
    },
  ];
}
