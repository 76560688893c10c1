/**
 * From what an app passes to `add`, `addBulk` or a FlowProducer to the job
 * records to write: validation (once, here), the queue's default options,
 * ids from the queue's counter, due times on ZooKeeper's clock, lanes, and
 * a child's link to its parent. Queue and FlowProducer build records only
 * through this file.
 */
import { type DefaultJobOptions, InvalidArgumentError, type JobsOptions, PayloadTooLargeError } from '@zkq/core';
import {
  assertJsonFaithful,
  type EnqueueEntry,
  laneOf,
  newRecord,
  type ParentLink,
  parentQueueName,
  type QueueStore,
  validateJobName,
  validateJobOptions,
  validatePrefix,
} from '@zkq/core/internal';

/** A job as validated, its options merged with its queue's defaults. */
export interface PreparedJob {
  name: string;
  data: unknown;
  opts: JobsOptions;
}

/** A prepared job about to be built: its parent, and whether it starts waiting for children of its flow. */
export interface JobToBuild extends PreparedJob {
  parentLink?: ParentLink | undefined;
  /** It has children in its flow: it starts in waiting-children (its delay counts from its release). */
  parked?: boolean;
}

/**
 * Validates one job (`where` names it in errors, e.g. `jobs[3]`) and merges
 * `defaults` under its options. Throws InvalidArgumentError (or a subclass:
 * InvalidJobDataError, PayloadTooLargeError) for the first problem.
 */
export function prepareJob(job: unknown, defaults: DefaultJobOptions | undefined, where: string): PreparedJob {
  if (!job || typeof job !== 'object') throw new InvalidArgumentError(`${where} must be { name, data, opts }`, where);
  const j = job as { name: unknown; data: unknown; opts?: unknown };
  validateJobName(j.name);
  validateJobOptions(j.opts);
  const opts: JobsOptions = { ...defaults, ...j.opts };
  assertJsonFaithful(j.data);
  if (opts.sizeLimit !== undefined) {
    const bytes = Buffer.byteLength(JSON.stringify(j.data ?? null));
    if (bytes > opts.sizeLimit) throw new PayloadTooLargeError(bytes, opts.sizeLimit, 'job data');
  }
  return { name: j.name, data: j.data, opts };
}

/** A child's link to `parent` with its failure policy from its options (BullMQ's names -> fpof, cpof, idof, rdof). */
export function linkTo(parent: { queue: string; id: string }, opts: JobsOptions): ParentLink {
  const link: ParentLink = { queue: parent.queue, id: parent.id };
  if (opts.failParentOnFailure) link.fpof = true;
  if (opts.continueParentOnFailure) link.cpof = true;
  if (opts.ignoreDependencyOnFailure) link.idof = true;
  if (opts.removeDependencyOnFailure) link.rdof = true;
  return link;
}

/**
 * The link of a job added with `opts.parent` (its queue by name or as
 * `<prefix>:<queue>`); none without. Throws InvalidArgumentError when the
 * qualified name is of another namespace than `prefix`: a flow lives in one,
 * and the same id in the same-named queue here is another job.
 */
export function parentLinkOf(opts: JobsOptions, prefix: string): ParentLink | undefined {
  const parent = opts.parent;
  if (!parent) return undefined;
  const at = parent.queue.lastIndexOf(':');
  if (at >= 0 && !samePrefix(parent.queue.slice(0, at), prefix)) {
    throw new InvalidArgumentError(
      `opts.parent.queue '${parent.queue}' is in another namespace than '${validatePrefix(prefix).slice(1)}': a flow lives in one`,
      'opts.parent.queue',
    );
  }
  return linkTo({ queue: parentQueueName(parent.queue), id: parent.id }, opts);
}

function samePrefix(given: string, prefix: string): boolean {
  try {
    return validatePrefix(given) === validatePrefix(prefix);
  } catch {
    return false; // not a namespace at all
  }
}

/**
 * The records of jobs of one queue (`store`): custom ids or fresh ones from
 * the queue's counter, in order. A delayed job gets its due time on
 * ZooKeeper's clock (measured first); a parked parent gets none yet.
 */
export async function buildRecords(store: QueueStore, jobs: readonly JobToBuild[]): Promise<EnqueueEntry[]> {
  const needIds = jobs.filter((j) => !j.opts.jobId).length;
  const ids = needIds ? await store.nextIds(needIds) : [];
  const delayed = (j: JobToBuild) => !j.parked && (j.opts.delay ?? 0) > 0;
  // due times are on ZooKeeper's clock: measure its offset first (at most every 30 s)
  if (jobs.some(delayed)) await store.clock.now();
  const now = Date.now();
  return jobs.map((j) => {
    const id = j.opts.jobId ?? (ids.shift() as string);
    const state = j.parked ? 'waiting-children' : delayed(j) ? 'delayed' : 'waiting';
    const record = newRecord(id, j.name, j.data, j.opts, state, now);
    if (state === 'delayed') record.due = store.clock.fromLocal(now + (j.opts.delay as number));
    if (j.parentLink) record.parentLink = j.parentLink;
    const entry: EnqueueEntry = { record, lane: laneOf(j.opts.priority ?? 0, j.opts.lifo ?? false) };
    if (j.opts.jobId) entry.custom = true;
    return entry;
  });
}
