/**
 * Job edit: a change of a job that is not running (its delay, priority,
 * data, an older version's log lines), planned from a fresh look at it and
 * written as one move at the version read. A claim or another edit taken
 * between the read and the write moves the version on: the move's op fails,
 * and the edit is planned again from a new look (the executor's retry
 * policy).
 */
import type { ProtocolContext } from './context.js';
import type { Plan } from './replan.js';

/**
 * Plans and writes an edit: `plan` looks at the job and answers with no
 * write, or with the move that writes the edit (it may throw: nothing is
 * written then). Rejects with TooManyConflictsError when the job kept
 * changing, or at once with an error that is no op's conflict.
 */
export function editJob<T>(store: ProtocolContext, plan: () => Promise<Plan<T>>, o: { receipt: boolean }): Promise<T> {
  return store.executor.runPlanned(plan, { receipt: o.receipt });
}
