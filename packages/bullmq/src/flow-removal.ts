/**
 * Taking jobs out of a flow: one child out of its parent's dependencies
 * (the protocol's detachChild), a parent's unprocessed children, a whole
 * tree. Each job goes by the protocol's removeJob, which takes a child out
 * of its parent's dependencies (releasing a parent left with none) and a
 * parent's dependencies with it.
 */
import { JobStateError } from '@zkq/core';
import {
  type ChildKey,
  childKey,
  claimRanOut,
  detachChild,
  type QueueStore,
  getDependencies as readDependencies,
  removeJob,
} from '@zkq/core/internal';
import { ErrorCode } from 'bullmq';
import type { BackendContext } from './context.js';
import { missingParent } from './flows.js';
import { finishedError } from './json.js';

/**
 * Takes a child that is not finished out of its parent's dependencies
 * (releasing a parent left with nothing pending) and forgets the link.
 * Resolves false when it was no pending dependency.
 */
export async function removeChildDependency(ctx: BackendContext, jobId: string, parentKey: string): Promise<boolean> {
  const outcome = await detachChild(await ctx.store(), jobId);
  if (outcome === 'no-job') throw finishedError(ErrorCode.JobNotExist, jobId, 'removeChildDependency');
  if (outcome === 'no-parent') missingParent(parentKey, 'removeChildDependency');
  return outcome === 'detached';
}

/**
 * Removes a parent's children that have not run (waiting, delayed, or
 * waiting for their own children, whose unprocessed children go too),
 * wherever they are; running and finished ones stay. A child goes before
 * its own children, so none of them releases it on the way.
 */
export async function removeUnprocessedChildren(ctx: BackendContext, jobId: string): Promise<void> {
  const store = await ctx.store();
  await removeUnprocessed(store, (await readDependencies(store, jobId)).unprocessed);
}

const UNPROCESSED = new Set(['waiting', 'delayed', 'waiting-children']);

async function removeUnprocessed(store: QueueStore, kids: readonly ChildKey[]): Promise<void> {
  for (const c of kids) {
    const cs = store.sibling(c.queue);
    const child = await cs.getJob(c.id);
    if (!child || !UNPROCESSED.has(child.record.state)) continue;
    if (await cs.getClaim(c.id)) continue;
    const below = (await readDependencies(cs, c.id)).unprocessed;
    try {
      await removeJob(cs, c.id);
    } catch (err) {
      if (!(err instanceof JobStateError)) throw err;
      continue; // claimed meanwhile: it runs, and so do its children
    }
    await removeUnprocessed(cs, below);
  }
}

/** A job of a tree to remove. */
interface TreeNode {
  store: QueueStore;
  id: string;
}

/**
 * A job and, with `children`, every job below it (processed ones too),
 * each parent before its children. A job met twice is listed once.
 */
async function treeOf(store: QueueStore, id: string, children: boolean): Promise<TreeNode[]> {
  const out: TreeNode[] = [];
  const seen = new Set<string>();
  const visit = async (s: QueueStore, jobId: string): Promise<void> => {
    const key = childKey({ queue: s.queue, id: jobId });
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ store: s, id: jobId });
    if (!children) return;
    const deps = await readDependencies(s, jobId);
    const kids = [...deps.unprocessed, ...[...deps.processed, ...deps.ignored, ...deps.failed].map((d) => d.child)];
    for (const c of kids) await visit(s.sibling(c.queue), c.id);
  };
  await visit(store, id);
  return out;
}

/** Claim nodes read at once. */
const CLAIM_READS = 100;

/** Whether a job of the tree is running (holds a claim whose lease has not run out: BullMQ's lock). */
async function anyRunning(store: QueueStore, tree: readonly TreeNode[]): Promise<boolean> {
  let now: number | undefined;
  for (let i = 0; i < tree.length; i += CLAIM_READS) {
    const batch = tree.slice(i, i + CLAIM_READS);
    const replies = await store.session.readMulti(
      batch.map((n) => ({ op: 'getData' as const, path: n.store.layout.claim(n.id) })),
    );
    for (const r of replies) {
      if (!r.ok) continue;
      now ??= await store.clock.earliest();
      if (!claimRanOut(r.data, r.stat.mtime, now)) return true;
    }
  }
  return false;
}

/**
 * Removes a job and, with `children`, its whole tree of children (processed
 * ones too). Resolves false, removing nothing, while a job of the tree runs
 * (BullMQ's 0). Parents go before their children: no child's removal
 * releases a parent about to go.
 */
export async function removeTree(store: QueueStore, jobId: string, children: boolean): Promise<boolean> {
  const tree = await treeOf(store, jobId, children);
  if (await anyRunning(store, tree)) return false;
  let all = true;
  for (const n of tree) {
    try {
      await removeJob(n.store, n.id);
    } catch (err) {
      if (!(err instanceof JobStateError)) throw err;
      all = false; // claimed since the check: it runs
    }
  }
  return all;
}
