/**
 * Flows (FlowProducer, `opts.parent`, waiting-children, dependencies) over
 * the protocol's (core `protocol/flows.ts`). BullMQ names a job by its key
 * `<prefix>:<queue>:<id>`; here every queue of a flow is in the backend's
 * namespace, so a key's last two parts are all that locate a job.
 */
import {
  addFlow as addFlowJobs,
  type ChildKey,
  dependencyCounts,
  detachOps,
  encodeRecord,
  FailedChildrenError,
  type FlowJob,
  JobExistsError,
  type JobRecord,
  JobStateError,
  joinBuilt,
  LostJobError,
  MissingParentError,
  NodeExistsError,
  NoPendingChildrenError,
  type ParentLink,
  type QueueStore,
  getDependencies as readDependencies,
  readDeps,
  removeJob,
} from '@zkq/core';
import { ErrorCode, type JobJson, type ParentKeyOpts } from 'bullmq';
import type { BackendContext } from './context.js';
import { finishedError } from './json.js';

/** The queue name of a qualified queue key `<prefix...>:<queue>`. */
function queueOfKey(queueKey: string): string {
  return queueKey.slice(queueKey.lastIndexOf(':') + 1);
}

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
  if (opts.parent) at = { queue: queueOfKey(opts.parent.queue), id: opts.parent.id };
  else if (job.parent?.queueKey && job.parent.id) at = { queue: queueOfKey(job.parent.queueKey), id: job.parent.id };
  else {
    const key = parentKeyOpts?.parentKey ?? job.parentKey;
    if (key) at = locateParentKey(key);
  }
  if (!at) return undefined;
  const link: ParentLink = { ...at };
  if (opts.failParentOnFailure || job.parent?.fpof) link.fpof = true;
  if (opts.continueParentOnFailure || job.parent?.cpof) link.cpof = true;
  if (opts.ignoreDependencyOnFailure || job.parent?.idof) link.idof = true;
  if (opts.removeDependencyOnFailure || job.parent?.rdof) link.rdof = true;
  return link;
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
 * Adds jobs of a flow (or single jobs with a parent) in one transaction.
 * Resolves with BullMQ's per-entry `[error, id | code]`: a missing parent
 * is code -5 for every entry, as nothing was added; a taken custom id is
 * JobExistsError.
 */
export async function addFlowEntries(store: QueueStore, jobs: FlowJob[]): Promise<[Error | null, string | number][]> {
  try {
    await addFlowJobs(store, jobs);
  } catch (err) {
    if (err instanceof MissingParentError) return jobs.map(() => [null, ErrorCode.ParentJobNotExist]);
    // a taken custom id: the create of its record failed
    const taken =
      err instanceof NodeExistsError
        ? jobs.find((j) => store.sibling(j.queue).layout.job(j.record.id) === err.path)
        : undefined;
    const error = taken ? new JobExistsError(taken.queue, taken.record.id) : (err as Error);
    return jobs.map(() => [error, 0]);
  }
  return jobs.map((j) => [null, j.record.id]);
}

/** Throws BullMQ's error for a missing parent. */
export function missingParent(ctx: BackendContext, link: ChildKey, command: string): never {
  throw finishedError(ErrorCode.ParentJobNotExist, bullKey(ctx, link), command);
}

/**
 * Parks an active parent until its children are done. Resolves false when
 * none is pending: the attempt goes on, still held.
 */
export async function moveToWaitingChildren(
  ctx: BackendContext,
  held: { job: import('@zkq/core').ClaimedJob },
): Promise<boolean> {
  const id = held.job.record.id;
  const store = await ctx.store();
  const deps = await readDeps(store, id);
  if (deps?.failed) throw finishedError(ErrorCode.JobHasFailedChildren, id, 'moveToWaitingChildren');
  if (!deps || deps.pending === 0) return false;
  const result = await (await ctx.finisher()).finish({ job: held.job, outcome: { kind: 'waiting-children' } });
  if (result.ok) return true;
  if (result.error instanceof NoPendingChildrenError) return false;
  if (result.error instanceof FailedChildrenError) {
    throw finishedError(ErrorCode.JobHasFailedChildren, id, 'moveToWaitingChildren');
  }
  if (result.error instanceof LostJobError) {
    throw finishedError(ErrorCode.JobLockNotExist, id, 'moveToWaitingChildren');
  }
  throw result.error;
}

/**
 * BullMQ refuses to complete a parent with pending (-4) or failed (-9)
 * children. Only parents are read for it: jobs added with children, or
 * parked once (a job given children later by `opts.parent` and never
 * parked is not checked).
 */
export async function checkCompletable(ctx: BackendContext, record: JobRecord): Promise<void> {
  if (!record.hasDeps) return;
  const deps = await readDeps(await ctx.store(), record.id);
  if (deps?.failed) throw finishedError(ErrorCode.JobHasFailedChildren, record.id, 'moveToFinished');
  if (deps && deps.pending > 0) throw finishedError(ErrorCode.JobPendingChildren, record.id, 'moveToFinished');
}

// ---- reads ----------------------------------------------------------------------

type Page = { cursor?: number; count?: number };

/** BullMQ's getDependencies: all four lists, or pages of those asked for (cursor: an offset). */
export async function getDependencies(
  ctx: BackendContext,
  jobId: string,
  opts: { processed?: Page; unprocessed?: Page; ignored?: Page; failed?: Page },
): Promise<Record<string, unknown>> {
  const deps = await readDependencies(await ctx.store(), jobId);
  const key = (c: ChildKey) => bullKey(ctx, c);
  const processed = deps.processed.map((p) => [key(p.child), JSON.stringify(p.value)] as const);
  const ignored = deps.ignored.map((p) => [key(p.child), p.reason] as const);
  const unprocessed = deps.unprocessed.map(key);
  const failed = deps.failed.map((f) => key(f.child));
  if (!opts.processed && !opts.unprocessed && !opts.ignored && !opts.failed) {
    return { processed: Object.fromEntries(processed), unprocessed, ignored: Object.fromEntries(ignored), failed };
  }
  const page = <T>(all: readonly T[], p: Page): { items: T[]; next: number } => {
    const from = p.cursor ?? 0;
    const count = p.count ?? 20;
    const items = all.slice(from, from + count);
    return { items, next: from + count < all.length ? from + count : 0 };
  };
  const out: Record<string, unknown> = {};
  if (opts.processed) {
    const { items, next } = page(processed, opts.processed);
    out.processed = Object.fromEntries(items);
    out.nextProcessedCursor = next;
  }
  if (opts.unprocessed) {
    const { items, next } = page(unprocessed, opts.unprocessed);
    out.unprocessed = items;
    out.nextUnprocessedCursor = next;
  }
  if (opts.ignored) {
    const { items, next } = page(ignored, opts.ignored);
    out.ignored = Object.fromEntries(items);
    out.nextIgnoredCursor = next;
  }
  if (opts.failed) {
    const { items, next } = page(failed, opts.failed);
    out.failed = items;
    out.nextFailedCursor = next;
  }
  return out;
}

/** BullMQ's getDependencyCounts, in the order of `types`. */
export async function getDependencyCounts(ctx: BackendContext, jobId: string, types: string[]): Promise<number[]> {
  const counts = await dependencyCounts(await ctx.store(), jobId);
  return types.map((t) => counts[t as keyof typeof counts] ?? 0);
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

// ---- detaching ------------------------------------------------------------------

/**
 * Takes a child that is not finished out of its parent's dependencies
 * (releasing a parent left with nothing pending) and forgets the link.
 * Resolves false when it was no pending dependency.
 */
export async function removeChildDependency(ctx: BackendContext, jobId: string, parentKey: string): Promise<boolean> {
  const store = await ctx.store();
  for (let attempt = 1; ; attempt++) {
    const stored = await store.getJob(jobId);
    if (!stored) throw finishedError(ErrorCode.JobNotExist, jobId, 'removeChildDependency');
    const link = stored.record.parentLink;
    if (!link) return false;
    const ps = store.sibling(link.queue);
    if (!(await ps.getJob(link.id))) missingParent(ctx, link, 'removeChildDependency');
    const detach = await detachOps(store, stored.record);
    if (!detach) return false;
    // the child forgets its parent, unless it is running (its record is its attempt's token)
    const forget =
      stored.record.state === 'active'
        ? undefined
        : {
            ops: [
              {
                op: 'setData' as const,
                path: store.layout.job(jobId),
                data: encodeRecord({ ...stored.record, parentLink: undefined }),
                version: stored.version,
              },
            ],
          };
    const [result] = await store.executor.run([{ build: () => joinBuilt(detach, forget) }], { receipt: false });
    if (result?.ok) return true;
    if (attempt >= 5) throw result?.error ?? new Error(`could not detach job ${jobId} from ${parentKey}`);
  }
}

/**
 * Removes a parent's children that have not run (waiting, delayed, or
 * waiting for their own children, whose children go first), wherever they
 * are; running and finished ones stay.
 */
export async function removeUnprocessedChildren(ctx: BackendContext, jobId: string): Promise<void> {
  await removeUnprocessed(await ctx.store(), jobId);
}

async function removeUnprocessed(store: QueueStore, jobId: string): Promise<void> {
  const deps = await readDependencies(store, jobId);
  for (const c of deps.unprocessed) {
    const cs = store.sibling(c.queue);
    const child = await cs.getJob(c.id);
    if (!child || !['waiting', 'delayed', 'waiting-children'].includes(child.record.state)) continue;
    if (await cs.getClaim(c.id)) continue;
    await removeUnprocessed(cs, c.id);
    await removeJob(cs, c.id).catch((err) => {
      if (!(err instanceof JobStateError)) throw err; // claimed meanwhile: it runs
    });
  }
}

/**
 * Removes a job and, with `children`, its whole tree of children first
 * (processed ones too). Resolves false when a job of the tree is running:
 * BullMQ's 0, with what could be removed removed.
 */
export async function removeTree(store: QueueStore, jobId: string, children: boolean): Promise<boolean> {
  let all = true;
  if (children) {
    const deps = await readDependencies(store, jobId);
    const kids = [...deps.unprocessed, ...[...deps.processed, ...deps.ignored, ...deps.failed].map((d) => d.child)];
    for (const c of kids) if (!(await removeTree(store.sibling(c.queue), c.id, true))) all = false;
  }
  if (!all) return false;
  try {
    await removeJob(store, jobId);
    return true;
  } catch (err) {
    if (err instanceof JobStateError) return false;
    throw err;
  }
}
