/**
 * What a session is opened with (options, clock, defaults) and what it tells
 * (typed events, counters).
 */

import type { ZooKeeperError } from './errors.js';
import type { RetryOptions } from './retry.js';
import type { SaslOptions } from './sasl.js';
import type { TlsOptions } from './tls.js';
import type { AclEntry, ConnectionState } from './types.js';

export interface SessionOptions {
  /** Servers, `host:port[,host:port...]`. */
  connectionString: string;
  /** Every path is taken relative to this node (created on connect), e.g. `zkq` (a leading slash is optional). Default: the root. */
  namespace?: string;
  /** Requested session timeout, ms; the server bounds it. Default 30000. */
  sessionTimeout?: number;
  /** How long `Session.connect` waits for the first connection, ms. Default 15000. */
  connectTimeout?: number;
  /** How long any request waits for its reply, ms. Default 10000. */
  requestTimeout?: number;
  /** Digest credentials, `user:password`. */
  auth?: string;
  /**
   * TLS to the servers' secure client port (`secureClientPort`): CA, client
   * certificate and key (the `x509` identity), server name, verification.
   * Every connection and reconnection, to any server of the ensemble, uses it.
   */
  tls?: TlsOptions;
  /**
   * SASL credentials (DIGEST-MD5, ZooKeeper's DigestLoginModule users): every
   * connection authenticates with them before any other request, as a server
   * with `enforce.auth.enabled` requires. The identity is `sasl:<username>`.
   */
  sasl?: SaslOptions;
  /** ACL of every node created: `creator` (default with `auth` or `sasl`), `open` (default without), or entries. */
  acl?: 'open' | 'creator' | readonly AclEntry[];
  /** Retry policy for reads and protected creates. */
  retry?: RetryOptions;
  /**
   * The clock queues on this session judge time on: `zookeeper` (default),
   * ZooKeeper's, one for every process; or `process`, this process's
   * `Date.now()`, which fake timers move. For tests in ONE process only: see
   * {@link ClockSource}.
   */
  clock?: ClockSource;
}

/**
 * Where due times, scheduler ticks, rate-limit windows, metrics minutes and
 * retention ages are read from. `zookeeper`: ZooKeeper's clock (a write's
 * mtime), the same for every process whatever their own clocks say.
 * `process`: `Date.now()` of this process, so a test that fakes the clock
 * (sinon, node:test's mock timers) moves them; processes whose clocks differ
 * would then promote early or late, compare leases across machines and split
 * rate-limit windows: never in production, never across processes.
 */
export type ClockSource = 'zookeeper' | 'process';

export const DEFAULT_SESSION_TIMEOUT_MS = 30_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** Typed events of a session. */
export interface SessionEvents {
  state: [state: ConnectionState];
  connected: [];
  suspended: [];
  reconnected: [info: { newSession: boolean }];
  lost: [];
  closed: [];
  /**
   * The server refused the connection itself (e.g. `AuthRequiredError`), or
   * TLS failed for good (`ConnectionSecurityError`): the session is closing
   * for good and every request rejects with this error.
   */
  failed: [error: ZooKeeperError];
  /** A `onNewSession` hook failed; the session itself is fine. */
  hookError: [error: unknown];
}

export type NewSessionHook = () => Promise<void> | void;

/** Counters for tests and benchmarks. */
export interface SessionStats {
  requests: number;
  /** The most names any `getChildren` reply of this session returned. */
  maxChildren: number;
  /** The path whose listing returned `maxChildren` names. */
  maxChildrenPath?: string;
  sessionsCreated: number;
}

/** Longest wait of close() for the server, ms (the hooks' included). */
export const DEFAULT_CLOSE_WAIT_MS = 3000;
