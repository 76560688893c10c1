/**
 * From a job its front-end validated to the record and ready entry to write:
 * its id (a custom one, or the next of the queue's counter), the state it
 * starts in, its due time on ZooKeeper's clock, its lane and its link to a
 * parent. zkq's Queue and FlowProducer and the BullMQ backend build records
 * only here; each validates its own input first, with its own errors.
 */
import { laneOf } from './layout.js';
import { MAX_DELAY_MS } from './options.js';
import { newRecord, type ParentLink } from './record.js';
import type { EnqueueEntry, QueueStore } from './store.js';
import type { JobsOptions } from './types.js';

/** A validated job about to be built. */
export interface JobToBuild {
  name: string;
  data: unknown;
  /** Its options, its queue's defaults merged in. */
  opts: JobsOptions;
  /** Its custom id, when it is not `opts.jobId` (BullMQ's Job carries it apart). */
  id?: string;
  /** When it was made, if before the build (BullMQ's Job): its delay counts from then. */
  timestamp?: number;
  parentLink?: ParentLink | undefined;
  /** It has children in its flow: it starts in waiting-children (its delay counts from its release). */
  parked?: boolean;
}

/** What a child does to its parent when it fails, as its options name it (BullMQ's names). */
export type FailurePolicy = Pick<
  JobsOptions,
  'failParentOnFailure' | 'continueParentOnFailure' | 'ignoreDependencyOnFailure' | 'removeDependencyOnFailure'
>;

/** A child's link to `parent` with its failure policy (stored as fpof, cpof, idof, rdof). */
export function linkTo(parent: { queue: string; id: string }, policy: FailurePolicy): ParentLink {
  const link: ParentLink = { queue: parent.queue, id: parent.id };
  if (policy.failParentOnFailure) link.fpof = true;
  if (policy.continueParentOnFailure) link.cpof = true;
  if (policy.ignoreDependencyOnFailure) link.idof = true;
  if (policy.removeDependencyOnFailure) link.rdof = true;
  return link;
}

/** A job's custom id, if it has one. */
function customId(j: JobToBuild): string | undefined {
  return j.id || j.opts.jobId || undefined;
}

/**
 * The records of jobs of one queue (`store`), in order: custom ids kept,
 * the others numbered from the queue's counter. A delayed job gets its due
 * time on ZooKeeper's clock (its offset measured first); a parked parent
 * gets none yet. A priority wins over lifo (lifo orders only the jobs
 * without one).
 */
export async function buildRecords(store: QueueStore, jobs: readonly JobToBuild[]): Promise<EnqueueEntry[]> {
  const needIds = jobs.filter((j) => !customId(j)).length;
  const ids = needIds ? await store.nextIds(needIds) : [];
  const delayOf = (j: JobToBuild) => (j.parked ? 0 : Math.min(Math.max(j.opts.delay ?? 0, 0), MAX_DELAY_MS));
  // due times are on ZooKeeper's clock: measure its offset first (at most every 30 s)
  if (jobs.some((j) => delayOf(j) > 0)) await store.clock.now();
  const now = Date.now();
  return jobs.map((j) => {
    const id = customId(j) ?? (ids.shift() as string);
    const delay = delayOf(j);
    const state = j.parked ? 'waiting-children' : delay > 0 ? 'delayed' : 'waiting';
    const record = newRecord(id, j.name, j.data, j.opts, state, now);
    if (j.timestamp) record.timestamp = j.timestamp;
    if (delay > 0) record.due = store.clock.fromLocal((j.timestamp || now) + delay);
    if (j.parentLink) record.parentLink = j.parentLink;
    const priority = j.opts.priority ?? 0;
    const entry: EnqueueEntry = { record, lane: laneOf(priority, (j.opts.lifo ?? false) && priority === 0) };
    if (customId(j)) entry.custom = true;
    return entry;
  });
}
