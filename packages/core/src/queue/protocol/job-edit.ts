/**
 * Job edit: a change of a job that is not running (its delay, priority,
 * data, an older version's log lines), planned from a fresh look at it and
 * written as one move at the version read. A claim or another edit taken
 * between the read and the write moves the version on: the move's op fails,
 * and the edit is planned again from a new look, EDIT_ATTEMPTS times at most.
 */
import type { QueueStore } from '../store.js';
import type { Move } from './moves.js';

/** Plans of an edit whose job keeps changing under it. */
export const EDIT_ATTEMPTS = 5;

/** An edit planned from a fresh look at the job: a move to write, or a result without one. */
export interface EditPlan<T> {
  result: T;
  move?: Move;
}

/**
 * Plans and writes an edit; `plan` may throw (nothing is written then).
 * Resolves with the plan's result once its move is written (or it has none);
 * rejects with the failed op's error when the job kept changing, or at once
 * with an error that is no op's conflict.
 */
export async function editJob<T>(
  store: QueueStore,
  plan: () => Promise<EditPlan<T>>,
  o: { receipt: boolean },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const planned = await plan();
    if (!planned.move) return planned.result;
    const [result] = await store.executor.run([planned.move], { receipt: o.receipt });
    if (result?.ok) return planned.result;
    // an op of the move failed: the job changed between the read and the write
    if (attempt >= EDIT_ATTEMPTS || (result?.error as { opIndex?: number })?.opIndex === undefined) {
      throw result?.error;
    }
  }
}
