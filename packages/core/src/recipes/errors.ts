/** Errors of the coordination recipes that callers must tell apart. */
import { ZkqError } from '../errors.js';

/** `LeaderElection.fence()` was called by a participant that is not the leader. */
export class NotLeaderError extends ZkqError {
  constructor(path: string) {
    super('ZKQ_NOT_LEADER', `not the leader of election ${path}`);
  }
}

/** `GroupMembership.join()` found a live member with the same id owned by another session. */
export class MemberExistsError extends ZkqError {
  constructor(readonly memberPath: string) {
    super('ZKQ_MEMBER_EXISTS', `another session is already a member as ${memberPath}`);
  }
}
