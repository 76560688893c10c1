export { CREATOR_ACL, digestId, OPEN_ACL, permissionBits, saslAcl, x509Acl } from './acl.js';
export * from './errors.js';
export { MAX_DATA_BYTES, PACKET_LIMIT_BYTES } from './limits.js';
export {
  READ_REPLY_OVERHEAD_BYTES,
  type ReadOp,
  type ReadResult,
  type ReadResults,
  readMultiBatchSize,
} from './multi-size.js';
export { backoffDelay, DEFAULT_RETRY, isRetryable, type RetryOptions, withRetry } from './retry.js';
export { type SaslOptions, saslOptionsProblem } from './sasl.js';
export { SEQUENCE_DIGITS, sequenceOf, sortBySequence } from './sequence.js';
export { Session } from './session.js';
export {
  type ClockSource,
  DEFAULT_CLOSE_WAIT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  type NewSessionHook,
  type SessionEvents,
  type SessionOptions,
  type SessionStats,
} from './session-types.js';
export { untilSilent } from './silence.js';
export { type TlsOptions, tlsOptionsProblem } from './tls.js';
export type { AclEntry, ConnectionState, CreateMode, Op, OpResult, Stat, WatchEvent, Watcher } from './types.js';
export {
  DEFAULT_WATCH_RETRY_MAX_MS,
  DEFAULT_WATCH_RETRY_MIN_MS,
  WatchLoop,
  type WatchLoopOptions,
} from './watch-loop.js';
