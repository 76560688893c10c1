/**
 * A pending child taken out of its parent's dependencies, as it is removed
 * or detached by hand: the count goes down at the version read and a
 * parent left with nothing pending is released (or removed too, by
 * BullMQ's hard removals). Called by the control moves and retention.
 */

import type { QueueEventRecord } from '../events.js';
import type { ChildKey } from '../layout.js';
import type { JobRecord } from '../record.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { depsTree } from './deps-entries.js';
import type { Built, ProtocolOp } from './executor.js';
import { type DepsNode, depsData, joinBuilt, readParent, releaseParent, reread, share } from './flow-parent.js';
import { DROP_INLINE } from './flow-sweep.js';

/** Whether a job may still be a pending dependency of its parent (a completed or settled one is not). */
export function mayBePendingChild(r: JobRecord): boolean {
  const link = r.parentLink;
  if (!link || r.state === 'completed') return false;
  return r.state !== 'failed' || !(link.fpof || link.cpof || link.idof || link.rdof);
}

/** How a child leaves its parent's dependencies. */
export interface DetachOptions {
  /**
   * The ops carry role `reread`: the caller builds them inside its unit's
   * `build()`, so a sibling writing the node first makes the unit read
   * again. Without it the ops are at the versions read and the caller plans
   * again after a conflict.
   */
  reread?: boolean;
  /**
   * BullMQ's hard removal (drain, clean): a parent in the same queue left
   * with nothing pending is removed too (its record at the version read,
   * its dependencies, and so on up) instead of released, so no worker runs
   * it between its release and its removal.
   */
  hard?: boolean;
}

/**
 * The ops that take a pending child out of its parent's dependencies (it is
 * removed, or detached by hand), releasing a parent left with nothing
 * pending (or removing it: `hard`). None when it is not a pending dependency.
 */
export async function detachOps(
  store: ProtocolContext,
  child: JobRecord,
  o: DetachOptions = {},
): Promise<Built | undefined> {
  const link = child.parentLink;
  if (!link) return undefined;
  const me: ChildKey = { queue: store.queue, id: child.id };
  const read = await readParent(store, link, me);
  if (!read.deps || !read.pending) return undefined;
  const ps = read.store;
  const tag = (op: ProtocolOp): ProtocolOp => (o.reread ? reread(op) : op);
  const node: DepsNode = { ...read.deps.node, pending: Math.max(0, read.deps.node.pending - 1) };
  const parent = read.parent;
  const last = parent?.record.state === 'waiting-children' && node.pending === 0;
  if (last && parent && o.hard && ps === store) return removeParentHard(ps, parent, read.deps.version, o);
  const ops: ProtocolOp[] = [
    tag({ op: 'setData', path: ps.layout.deps(link.id), data: depsData(node), version: read.deps.version }),
    tag({ op: 'delete', path: read.pending }),
  ];
  if (last && parent) {
    const released = await releaseParent(ps, parent);
    // without `reread` the caller plans again; `into` stays: a bucket removed since the
    // remover cached it must be forgotten, or every plan picks it again
    const plain = o.reread
      ? released
      : {
          ...released,
          ops: released.ops.map(({ role, ...op }): ProtocolOp => (role === 'into' ? { ...op, role } : op)),
        };
    return joinBuilt({ ops }, share(store, ps, plain));
  }
  return { ops };
}

/**
 * Removes a parent whose last pending child goes by a hard removal: its
 * record at the version read, its waiting-children pointer, its dependency
 * node (checked at `depsVersion`) with its entries, and it leaves its own
 * parent the same way.
 */
async function removeParentHard(
  ps: ProtocolContext,
  parent: StoredJob,
  depsVersion: number,
  o: DetachOptions,
): Promise<Built> {
  const tag = (op: ProtocolOp): ProtocolOp => (o.reread ? reread(op) : op);
  const r = parent.record;
  const depsPath = ps.layout.deps(r.id);
  const tree = await depsTree(ps, r.id, DROP_INLINE);
  const ops: ProtocolOp[] = [tag({ op: 'delete', path: ps.layout.job(r.id), version: parent.version })];
  if (r.parked) ops.push(tag({ op: 'delete', path: r.parked }));
  // a node too large for one transaction is left to the leader's sweep of orphans
  if (tree && tree.length > 0) {
    ops.push(tag({ op: 'check', path: depsPath, version: depsVersion }));
    for (const path of tree) ops.push(tag({ op: 'delete', path }));
  }
  const events: QueueEventRecord[] = [{ event: 'removed', jobId: r.id, prev: 'waiting-children', ts: Date.now() }];
  return joinBuilt({ ops, events }, await detachOps(ps, r, o));
}
