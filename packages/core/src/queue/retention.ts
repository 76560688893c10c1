/**
 * Retention of finished jobs (removeOnComplete / removeOnFail).
 *
 * ZooKeeper keeps every node in memory, so zkq keeps a bounded number of
 * finished jobs by default (DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED);
 * `true` removes a job as it finishes, a number or `{ age, count }` keeps
 * that many / that recent. Trimming deletes the oldest pointers with their
 * records, in transactions of TRIM_BATCH jobs.
 */
import { NoNodeError } from '../zk/errors.js';
import { sortBySequence } from '../zk/sequence.js';
import type { Op } from '../zk/types.js';
import { idOfPointer } from './layout.js';
import type { QueueStore } from './store.js';
import type { KeepJobs } from './types.js';

export const DEFAULT_KEEP_COMPLETED: KeepJobs = { count: 1000 };
export const DEFAULT_KEEP_FAILED: KeepJobs = { count: 5000 };
const TRIM_BATCH = 200;

/** The KeepJobs a job option means, or 'remove' for true/0. */
export function keepPolicy(option: boolean | number | KeepJobs | undefined, fallback: KeepJobs): KeepJobs | 'remove' {
  if (option === true || option === 0) return 'remove';
  if (option === false) return {};
  if (typeof option === 'number') return { count: option };
  return option ?? fallback;
}

/** Deletes the oldest finished jobs of `kind` beyond `keep`; resolves with the removed ids. */
export async function trimFinished(store: QueueStore, kind: 'completed' | 'failed', keep: KeepJobs): Promise<string[]> {
  const { session, layout } = store;
  const dir = kind === 'completed' ? layout.completedDir : layout.failedDir;
  const names = sortBySequence(await session.getChildren(dir)); // oldest first
  const excess = keep.count !== undefined ? Math.max(0, names.length - keep.count) : 0;
  const victims = names.slice(0, excess);
  if (keep.age !== undefined) {
    const cutoff = Date.now() - keep.age * 1000;
    for (const name of names.slice(excess)) {
      const job = await store.getJob(idOfPointer(name));
      if (job && (job.record.finishedOn ?? 0) >= cutoff) break;
      victims.push(name);
    }
  }
  const limited = keep.limit ? victims.slice(0, keep.limit) : victims;
  const removed: string[] = [];
  for (let i = 0; i < limited.length; i += TRIM_BATCH) {
    const batch = limited.slice(i, i + TRIM_BATCH);
    const ops: Op[] = batch.flatMap((name) => [
      { op: 'delete', path: `${dir}/${name}` } as Op,
      { op: 'delete', path: layout.job(idOfPointer(name)) } as Op,
    ]);
    try {
      await session.multi(ops);
      removed.push(...batch.map(idOfPointer));
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      // someone trimmed concurrently: fall back to one job at a time
      for (const name of batch) {
        await session
          .multi([
            { op: 'delete', path: `${dir}/${name}` },
            { op: 'delete', path: layout.job(idOfPointer(name)) },
          ])
          .then(
            () => removed.push(idOfPointer(name)),
            (e) => {
              if (!(e instanceof NoNodeError)) throw e;
            },
          );
      }
    }
  }
  return removed;
}
