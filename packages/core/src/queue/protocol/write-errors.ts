/** The errors a protocol write ends with when it cannot go on (executor.ts, replan.ts). */
import { ZkqError } from '../../errors.js';

/** A fenced write failed its fence: this process is no longer the leader (or a claim met a pause). */
export class FencedError extends ZkqError {
  constructor(cause: unknown) {
    super('ZKQ_FENCED', 'the write was fenced off: its fence no longer holds (leadership lost, or queue paused)', {
      cause,
    });
  }
}

/** A transaction's outcome stayed unknown after several tries to send it or read it back. */
export class OutcomeUnknownError extends ZkqError {
  constructor(cause: unknown) {
    super('ZKQ_OUTCOME_UNKNOWN', 'could not learn whether a transaction was applied', { cause });
  }
}

/** An optimistic write met another writer PLAN_ATTEMPTS times in a row; nothing of it was applied. */
export class TooManyConflictsError extends ZkqError {
  constructor(
    readonly attempts: number,
    cause: unknown,
  ) {
    super('ZKQ_TOO_MANY_CONFLICTS', `gave up after ${attempts} plans, each met a write by another process`, {
      cause,
    });
  }
}
