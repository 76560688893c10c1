/** The coordination recipes, built on the session layer's public API only. */
export { Barrier, type BarrierOptions } from './barrier.js';
export { BatchBarrier } from './batch-barrier.js';
export { DoubleBarrier } from './double-barrier.js';
export { ELECTION_CHANNEL, type ElectionTrace } from './election-trace.js';
export { BarrierInUseError, MemberExistsError, NotLeaderError } from './errors.js';
export {
  GroupMembership,
  type GroupMembershipEvents,
  type GroupMembershipOptions,
  type Member,
} from './group-membership.js';
export {
  exclusiveDriver,
  type LockDriver,
  type TurnDecision,
  type WaitOptions,
  type WaitStats,
} from './internals.js';
export { LeaderElection, type LeaderElectionEvents, type LeaderElectionOptions } from './leader-election.js';
export { type AcquireOptions, Lock, type LockEvents, type LockOptions } from './lock.js';
export { ReadWriteLock, readDriver, writeDriver } from './read-write-lock.js';
export { WatchedConfig, type WatchedConfigEvents, type WatchedConfigOptions } from './watched-config.js';
