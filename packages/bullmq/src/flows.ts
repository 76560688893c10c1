/**
 * Flows (FlowProducer, `opts.parent`, waiting-children) over the protocol's
 * (core `protocol/flow-*.ts`): adding, parking a running parent, and the
 * checks before a parent completes. Reads are in flow-reads.ts, removals in
 * flow-removal.ts. BullMQ names a job by its key `<prefix>:<queue>:<id>`;
 * here every queue of a flow is in the backend's namespace, so a key's last
 * two parts are all that locate a job.
 */
import { FailedChildrenError, LostJobError, MissingParentError, NoPendingChildrenError } from '@zkq/core';
import {
  addFlows,
  type ChildKey,
  childKey,
  enqueueJobs,
  type FlowJob,
  hasDependencies as givenDeps,
  isPendingChild,
  type JobRecord,
  linkTo,
  type ParentLink,
  parentQueueName,
  parentsHeld,
  type QueueStore,
  readDeps,
} from '@zkq/core/internal';
import { ErrorCode, type JobJson, type ParentKeyOpts } from 'bullmq';
import type { BackendContext } from './context.js';
import { finishedError } from './json.js';

/** A job's link to its parent, from BullMQ's job (`parent`, `opts.parent`, `parentKey`); none without one. */
export function parentLinkOf(job: JobJson, parentKeyOpts?: ParentKeyOpts): ParentLink | undefined {
  const opts = (job.opts ?? {}) as JobJson['opts'] & {
    parent?: { id: string; queue: string };
    failParentOnFailure?: boolean;
    continueParentOnFailure?: boolean;
    ignoreDependencyOnFailure?: boolean;
    removeDependencyOnFailure?: boolean;
  };
  let at: ChildKey | undefined;
  if (opts.parent) at = { queue: parentQueueName(opts.parent.queue), id: opts.parent.id };
  else if (job.parent?.queueKey && job.parent.id)
    at = { queue: parentQueueName(job.parent.queueKey), id: job.parent.id };
  else {
    const key = parentKeyOpts?.parentKey ?? job.parentKey;
    if (key) at = locateParentKey(key);
  }
  if (!at) return undefined;
  const given = job.parent;
  return linkTo(at, {
    failParentOnFailure: Boolean(opts.failParentOnFailure || given?.fpof),
    continueParentOnFailure: Boolean(opts.continueParentOnFailure || given?.cpof),
    ignoreDependencyOnFailure: Boolean(opts.ignoreDependencyOnFailure || given?.idof),
    removeDependencyOnFailure: Boolean(opts.removeDependencyOnFailure || given?.rdof),
  });
}

/** The parent's key as the caller gave it (`<queue key>:<id>`), which BullMQ's errors name; none without a parent. */
export function givenParentKey(job: JobJson, parentKeyOpts?: ParentKeyOpts): string | undefined {
  const parent = (job.opts as { parent?: { id: string; queue: string } } | undefined)?.parent;
  if (parent) return `${parent.queue}:${parent.id}`;
  if (job.parent?.queueKey && job.parent.id) return `${job.parent.queueKey}:${job.parent.id}`;
  return parentKeyOpts?.parentKey ?? job.parentKey ?? undefined;
}

/** A parent key `<prefix>:<queue>:<id>`: BullMQ's own ids carry no ':' (uuids and numbers). */
function locateParentKey(key: string): ChildKey {
  const parts = key.split(':');
  const id = parts.pop() ?? '';
  return { queue: parts.pop() ?? '', id };
}

/** A child key as BullMQ shows it: `<prefix>:<queue>:<id>`. */
export function bullKey(ctx: BackendContext, c: ChildKey): string {
  return `${ctx.prefix}:${c.queue}:${c.id}`;
}

/**
 * Splits a flow's entries (parents before their children, as FlowProducer
 * gives them; those `skip` says aside) into trees: a job goes with its
 * parent when that is an entry too, else it starts a tree of its own.
 */
function trees(jobs: readonly FlowJob[], skip: (j: FlowJob) => boolean): { jobs: FlowJob[]; at: number[] }[] {
  const out: { jobs: FlowJob[]; at: number[] }[] = [];
  const treeOf = new Map<string, { jobs: FlowJob[]; at: number[] }>();
  jobs.forEach((j, i) => {
    if (skip(j)) return;
    const link = j.record.parentLink;
    const tree = (link && treeOf.get(childKey(link))) || { jobs: [], at: [] };
    if (tree.jobs.length === 0) out.push(tree);
    tree.jobs.push(j);
    tree.at.push(i);
    treeOf.set(childKey({ queue: j.queue, id: j.record.id }), tree);
  });
  return out;
}

/**
 * Adds the jobs of flows (or single jobs with a parent), each tree in one
 * transaction of its own, as BullMQ's commands each stand alone. Resolves
 * with BullMQ's per-entry `[error, id | code]`: -5 for the entries of a tree
 * whose parent is missing (nothing of it added), -7 for an existing job
 * that has another parent.
 */
export async function addFlowEntries(store: QueueStore, jobs: FlowJob[]): Promise<[Error | null, string | number][]> {
  const out: [Error | null, string | number][] = jobs.map(() => [null, 0]);
  // a node with a deduplication key stands alone (BullMQ allows one on a node without parent or children)
  const keyed = (j: FlowJob) => Boolean(j.record.opts.deduplication) && !j.record.parentLink;
  for (const [i, j] of jobs.entries()) {
    if (!keyed(j)) continue;
    const js = store.sibling(j.queue);
    await js.init();
    const [added] = await enqueueJobs(js, [{ record: j.record, lane: j.lane, custom: true }]);
    if (added?.kind === 'existing') await js.publish([{ event: 'duplicated', jobId: added.id, ts: Date.now() }]);
    out[i] = [null, added?.id ?? j.record.id];
  }
  const split = trees(jobs, keyed);
  const results = await addFlows(
    store,
    split.map((t) => t.jobs),
  );
  split.forEach((tree, n) => {
    const r = results[n];
    tree.at.forEach((i, k) => {
      const id = (jobs[i] as FlowJob).record.id;
      if (r?.ok) out[i] = [null, r.outcomes[k] === 'refused' ? ErrorCode.ParentJobCannotBeReplaced : id];
      else if (r?.error instanceof MissingParentError) out[i] = [null, ErrorCode.ParentJobNotExist];
      else out[i] = [(r?.error as Error) ?? null, 0];
    });
  });
  return out;
}

/** Throws BullMQ's error for a missing parent, named by its key as given. */
export function missingParent(parentKey: string, command: string): never {
  throw finishedError(ErrorCode.ParentJobNotExist, parentKey, command);
}

/**
 * Parks an active parent until its children are done (or, given `child`,
 * while that child is pending). Resolves false when it waits for nothing:
 * the attempt goes on, still held. BullMQ's order of refusals: the job
 * missing, a child failed it, and only then its lock (a real token) or its
 * state (token '0').
 */
export async function moveToWaitingChildren(
  ctx: BackendContext,
  jobId: string,
  token: string,
  child?: { id: string; queue: string },
): Promise<boolean> {
  const command = 'moveToWaitingChildren';
  const store = await ctx.store();
  const held = ctx.held.get(jobId);
  if (!held && !(await store.getJob(jobId))) throw finishedError(ErrorCode.JobNotExist, jobId, command);
  const deps = await readDeps(store, jobId);
  if (deps?.failed) throw finishedError(ErrorCode.JobHasFailedChildren, jobId, command);
  if (!deps || deps.pending === 0) return false;
  if (child) {
    const c: ChildKey = { queue: parentQueueName(child.queue), id: child.id };
    if (!(await isPendingChild(store, jobId, c))) return false;
  }
  if (!held) {
    throw token === '0'
      ? finishedError(ErrorCode.JobNotInState, jobId, command, 'active')
      : finishedError(ErrorCode.JobLockNotExist, jobId, command);
  }
  if (token !== '0' && held.lock !== token) throw finishedError(ErrorCode.JobLockMismatch, jobId, command, 'active');
  const result = await (await ctx.finisher()).finish({ job: held.job, outcome: { kind: 'waiting-children' } });
  if (result.ok) return true;
  if (result.error instanceof NoPendingChildrenError) return false;
  if (result.error instanceof FailedChildrenError) throw finishedError(ErrorCode.JobHasFailedChildren, jobId, command);
  if (result.error instanceof LostJobError) throw finishedError(ErrorCode.JobLockNotExist, jobId, command);
  throw result.error;
}

/**
 * BullMQ refuses to complete a parent with pending (-4) or failed (-9)
 * children. Read for a job added with children or parked once, and for any
 * job of a queue that ever held a parent's dependencies (a running job may
 * be given children by `opts.parent`). Resolves whether it has dependencies.
 */
export async function checkCompletable(ctx: BackendContext, record: JobRecord): Promise<boolean> {
  const store = await ctx.store();
  if (!record.hasDeps && !(await parentsHeld(store, ctx.onError))) return false;
  const deps = await readDeps(store, record.id);
  if (deps?.failed) throw finishedError(ErrorCode.JobHasFailedChildren, record.id, 'moveToFinished');
  if (deps && deps.pending > 0) throw finishedError(ErrorCode.JobPendingChildren, record.id, 'moveToFinished');
  return deps !== undefined;
}

/** Whether a job about to fail has dependencies, given while it ran included (its removal takes them along). */
export async function hasDependencies(ctx: BackendContext, record: JobRecord): Promise<boolean> {
  return givenDeps(await ctx.store(), record, ctx.onError);
}
