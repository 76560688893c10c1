/**
 * The progress a job may report, checked where it is made: a Worker's main
 * thread and the threads of its file processor alike. Light on purpose
 * (errors and the record's codec only): a processor thread loads it at its
 * start, as `@zkq/core/progress`, where the whole of `@zkq/core` would cost
 * each thread a ZooKeeper client and a cron parser it never uses.
 */
import { PayloadTooLargeError } from './errors.js';
import { assertJsonFaithful } from './record.js';

/** Largest progress value (serialized) a job may report; larger ones are refused with PayloadTooLargeError. */
export const MAX_PROGRESS_BYTES = 64 * 1024;

/**
 * Throws what a job's `updateProgress` refuses `progress` with:
 * InvalidJobDataError when JSON cannot carry it faithfully (a BigInt, NaN, a
 * function, a cycle), PayloadTooLargeError over MAX_PROGRESS_BYTES.
 */
export function checkProgress(progress: unknown): void {
  assertJsonFaithful(progress, 'progress');
  const bytes = Buffer.byteLength(JSON.stringify(progress ?? null));
  if (bytes > MAX_PROGRESS_BYTES) throw new PayloadTooLargeError(bytes, MAX_PROGRESS_BYTES, 'progress');
}
