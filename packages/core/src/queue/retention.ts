/**
 * Retention of finished jobs (removeOnComplete / removeOnFail).
 *
 * ZooKeeper keeps every node in memory, so zkq keeps a bounded number of
 * finished jobs by default (DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED);
 * `true` removes a job as it finishes, a number or `{ age, count }` keeps
 * that many / that recent. Trimming (protocol/moves.ts) deletes the oldest
 * pointers with their records.
 */
import type { KeepJobs } from './types.js';

export { trimFinished } from './protocol/moves.js';

export const DEFAULT_KEEP_COMPLETED: KeepJobs = { count: 1000 };
export const DEFAULT_KEEP_FAILED: KeepJobs = { count: 5000 };

/** The KeepJobs a job option means, or 'remove' for true/0. */
export function keepPolicy(option: boolean | number | KeepJobs | undefined, fallback: KeepJobs): KeepJobs | 'remove' {
  if (option === true || option === 0) return 'remove';
  if (option === false) return {};
  if (typeof option === 'number') return { count: option };
  return option ?? fallback;
}
