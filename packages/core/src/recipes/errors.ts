/** Errors of the coordination recipes that callers must tell apart. */
import { ZkqError } from '../errors.js';

/** `LeaderElection.fence()` was called by a participant that is not the leader. */
export class NotLeaderError extends ZkqError {
  constructor(path: string) {
    super('ZKQ_NOT_LEADER', `not the leader of election ${path}`);
  }
}

/**
 * `GroupMembership.join()` found a live member with the same id: owned by another session, or
 * joined by another `GroupMembership` of the same session that has not left.
 */
export class MemberExistsError extends ZkqError {
  constructor(readonly memberPath: string) {
    super('ZKQ_MEMBER_EXISTS', `another member already holds ${memberPath}`);
  }
}

/**
 * `BatchBarrier.reset()` found members present: forgetting the released
 * batches would make the members of those batches count again, and let a
 * waiter pass with them instead of with members of its own batch.
 */
export class BarrierInUseError extends ZkqError {
  constructor(
    readonly barrierPath: string,
    readonly members: number,
  ) {
    super(
      'ZKQ_BARRIER_IN_USE',
      `barrier ${barrierPath} still has ${members} member(s): reset it once every member left`,
    );
  }
}
