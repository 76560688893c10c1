/**
 * Retention of finished jobs (removeOnComplete / removeOnFail).
 *
 * ZooKeeper keeps every node in memory, so zkq keeps a bounded number of
 * finished jobs by default (DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED);
 * `true` (or a count of 0) removes a job as it finishes, a number or
 * `{ age, count }` keeps that many / that recent. A count is kept inside the
 * finish's own transaction (protocol/trims.ts); an age, and a count a finish
 * could not keep, by the Trimmer (protocol/trim-finished.ts), which
 * deletes the oldest pointers with their records.
 */
import type { KeepJobs } from './types.js';

export { trimFinished } from './protocol/trim-finished.js';

export const DEFAULT_KEEP_COMPLETED: KeepJobs = { count: 1000 };
export const DEFAULT_KEEP_FAILED: KeepJobs = { count: 5000 };

/** The KeepJobs a job option means, or 'remove' for true/0. */
export function keepPolicy(option: boolean | number | KeepJobs | undefined, fallback: KeepJobs): KeepJobs | 'remove' {
  if (option === true || option === 0) return 'remove';
  if (option === false) return {};
  if (typeof option === 'number') return { count: option };
  if (option?.count === 0) return 'remove'; // nothing kept, whatever the age
  return option ?? fallback;
}

/** What the Trimmer still has to do after a finish: the age bound, and the count when the finish could not keep it. */
export function trimAfterFinish(keep: KeepJobs, trimLater: boolean | undefined): KeepJobs | undefined {
  if (keep.age === undefined && !(trimLater && keep.count !== undefined)) return undefined;
  const rest: KeepJobs = { ...keep };
  if (!trimLater) delete rest.count;
  return rest;
}
