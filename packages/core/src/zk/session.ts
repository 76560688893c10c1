/**
 * The ZooKeeper session layer: the only code that talks to the wire client.
 *
 * node-zookeeper-client is callback-only, has no request timeout, is dead for
 * good once its session expires, and leaves it to the caller to recover from
 * a connection loss in the middle of a sequential create. `Session` fixes
 * that once for everything above it:
 *
 * - promises for every operation, `multi` included, failing with typed
 *   errors (`NoNodeError`, `BadVersionError`, ...) that name the path;
 * - a timeout on connect and on every request (`RequestTimeoutError`);
 * - reads retried with backoff (`withRetry`); writes are never retried
 *   blindly, and sequential creates are *protected*: the node name carries a
 *   per-request id, so after a connection loss the create finds its own node
 *   (looking after a `sync`) instead of making a second one;
 * - `sync`, which the wire client lacks, as a write barrier;
 * - a heartbeat bounded by the session timeout (see `startProbe`): a link
 *   that dies silently is dropped, and `suspended` emitted, at least a third
 *   of a session timeout before the server can expire the session;
 * - connection states (`connected`, `suspended`, `reconnected`, `lost`,
 *   `closed`) as typed events; after expiry (or a suspension longer than the
 *   session timeout, when the server must have expired it) a new session is
 *   built at once and `onNewSession` hooks run so that recipes re-create
 *   their ephemeral nodes; pending watches get a `sessionLost` event;
 * - `readMulti`, ZooKeeper's read-only multi (3.6+), which the wire client
 *   lacks: many getData / getChildren in one request, each failing alone;
 * - a namespace (every path is relative to it) and digest auth, with the ACL
 *   applied to every node this session creates, the namespace node included;
 *   missing ancestors of the namespace node are created open, like the root,
 *   so that tenants with namespaces under one parent can each create theirs;
 * - TLS (`tls`) and SASL DIGEST-MD5 (`sasl`, before any other request) on
 *   every connection, through wire.ts;
 * - a server that refuses the connection itself (it requires authentication
 *   this session has not done, -124, or answers an auth packet, a SASL token
 *   or a ping with an error), or a TLS connection that cannot be made secure,
 *   fails the session for good: `failed` carries the typed error, pending and
 *   later requests reject with it, and the session closes, where reconnecting
 *   would only be refused again.
 */

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
// node:timers' own functions, not the globals: a test that fakes the global
// timers (sinon, node:test's mock timers) must not freeze request timeouts,
// the heartbeat or the suspension timer
import { clearTimeout, setTimeout } from 'node:timers';
import type { ConnectionOptions as NodeTlsOptions } from 'node:tls';
import { CREATOR_ACL, OPEN_ACL } from './acl.js';
import {
  BadArgumentsError,
  ConnectionSecurityError,
  ConnectTimeoutError,
  errorFromCode,
  isOutcomeUnknown,
  NodeExistsError,
  NoNodeError,
  RequestTimeoutError,
  SessionClosedError,
  SessionExpiredError,
  WIRE_EXTENSIONS_VERSION,
  WireClientMismatchError,
  ZK_CODES,
  type ZooKeeperError,
} from './errors.js';
import { MAX_DATA_BYTES, PACKET_LIMIT_BYTES } from './limits.js';
import { isRetryable, type RetryOptions, withRetry } from './retry.js';
import { type SaslOptions, saslOptionsProblem } from './sasl.js';
import { type TlsOptions, tlsOptionsProblem } from './tls.js';
import type { AclEntry, ConnectionState, CreateMode, Op, OpResult, Stat, Watcher } from './types.js';
import {
  acceptUnknownErrorCodes,
  assertReadMultiSupported,
  discardTornReplies,
  dropConnection,
  eventType,
  onConnectionRefused,
  onSecurityFailure,
  requestPipeProblems,
  sendMulti,
  sendReadMulti,
  tlsProblems,
  toStat,
  tuneClient,
  useSasl,
  useTls,
  type WireClient,
  type WireOp,
  type WireReadResult,
  type WriteResult,
  wire,
  wireAcl,
  wireErrorCode,
  wireMode,
} from './wire.js';

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

type Callback<T> = (err: unknown, result?: T) => void;

/** Most bytes of a `multi` request (estimated by `opBytes`): ZooKeeper's packet limit less a margin. */
export const MULTI_BYTE_LIMIT = PACKET_LIMIT_BYTES - 16 * 1024;
/** Bytes of a `multi` request besides its ops. */
export const MULTI_OVERHEAD_BYTES = 64;

/** An upper bound of the bytes one op adds to a `multi` request, its path under `namespace`. */
export function opBytes(op: Op, namespace = ''): number {
  return (
    64 + Buffer.byteLength(namespace) + Buffer.byteLength(op.path) + ('data' in op && op.data ? op.data.length : 0)
  );
}

/** One read of a `readMulti`. */
export type ReadOp = { op: 'getData'; path: string } | { op: 'getChildren'; path: string };

/** The result of one read of a `readMulti`: its value, or the error of that read alone. */
export type ReadResult<R extends ReadOp = ReadOp> =
  | (R extends { op: 'getData' } ? { ok: true; data: Buffer; stat: Stat } : { ok: true; children: string[] })
  | { ok: false; error: ZooKeeperError };

/** The results of a `readMulti`, one per read, each typed by its read. */
export type ReadResults<R extends readonly ReadOp[]> = { -readonly [K in keyof R]: ReadResult<R[K] & ReadOp> };

/**
 * Bytes a `readMulti` reply spends on one getData besides the node's data
 * (its result header, data length and stat: 81, rounded up).
 */
export const READ_REPLY_OVERHEAD_BYTES = 96;

/**
 * How many getData of nodes holding at most `maxDataBytes` each one
 * `readMulti` may carry so that its reply stays under the packet limit
 * (MULTI_BYTE_LIMIT): 900 nodes of 1 KB, 1 node of 512 KB. A getChildren adds
 * its whole listing (about 4 + name length per child) to the reply.
 */
export function readMultiBatchSize(maxDataBytes: number): number {
  return Math.max(1, Math.floor(MULTI_BYTE_LIMIT / (Math.max(0, maxDataBytes) + READ_REPLY_OVERHEAD_BYTES)));
}

/** An upper bound of the bytes one read adds to a `readMulti` request (as `opBytes`). */
export function readOpBytes(read: ReadOp, namespace = ''): number {
  return 64 + Buffer.byteLength(namespace) + Buffer.byteLength(read.path);
}

/** Length of the per-request id protected sequential names carry. */
const PROTECT_ID_BYTES = 6;
/** Longest wait of close() for the work registered with beforeClose, ms. */
const CLOSE_HOOKS_MS = 1000;
/** Longest wait of close() for the server, ms (the hooks' included). */
export const DEFAULT_CLOSE_WAIT_MS = 3000;

export class Session extends EventEmitter<SessionEvents> {
  readonly namespace: string;
  readonly stats: SessionStats = { requests: 0, maxChildren: 0, sessionsCreated: 0 };
  private client!: WireClient;
  private current: ConnectionState | 'connecting' = 'connecting';
  private readonly acl: ReturnType<typeof wireAcl>;
  private readonly hooks = new Set<NewSessionHook>();
  private readonly watchers = new Set<Watcher & { path?: string }>();
  /** Watchers pending per `kind:path`, so that re-arming the same function does not register it twice. */
  private readonly armed = new Map<string, Set<Watcher>>();
  /** Requests awaiting a reply, with the wire client they went to (see `failPending`). */
  private readonly pending = new Set<{ client: WireClient; fail: (error: (path: string) => ZooKeeperError) => void }>();
  private suspendTimer: NodeJS.Timeout | undefined;
  /** The heartbeat's next check (see `startProbe`). */
  private probeTimer: NodeJS.Timeout | undefined;
  /** When the last request was sent, on the monotonic clock (the probe only runs on a quiet session). */
  private lastRequestAt = performance.now();
  /**
   * When the newest request the server has answered was sent, on the
   * monotonic clock: the server heard from this session then, or later.
   */
  private lastAnsweredAt = performance.now();
  private probeInFlight = false;
  /** The wire client is connected (a handshake answered, no disconnection since). */
  private linkUp = false;
  private isClosed = false;
  /** Why the session failed for good (see `failed`): the error each request then gets, for its path. */
  private failure: ((path?: string) => ZooKeeperError) | undefined;
  private closing: Promise<void> | undefined;
  private readonly closeHooks = new Set<() => Promise<unknown>>();

  private constructor(private readonly options: SessionOptions) {
    super();
    this.namespace = normalizeNamespace(options.namespace);
    const acl = options.acl ?? (options.auth || options.sasl ? 'creator' : 'open');
    this.acl = wireAcl(acl === 'open' ? OPEN_ACL : acl === 'creator' ? CREATOR_ACL : acl);
  }

  /**
   * Connects (within `connectTimeout`), creates the namespace node, and
   * resolves. `signal` gives up on a connect still under way (its owner
   * closed): it rejects with SessionClosedError and leaves nothing open.
   */
  static async connect(options: SessionOptions, { signal }: { signal?: AbortSignal } = {}): Promise<Session> {
    if (!options.connectionString || typeof options.connectionString !== 'string') {
      throw new BadArgumentsError('connectionString must be a non-empty string like "127.0.0.1:2181"');
    }
    if (signal?.aborted) throw new SessionClosedError('/');
    const tlsProblem = tlsOptionsProblem(options.tls);
    if (tlsProblem) throw new BadArgumentsError(tlsProblem[0]);
    const saslProblem = saslOptionsProblem(options.sasl);
    if (saslProblem) throw new BadArgumentsError(saslProblem[0]);
    if (options.sasl) {
      // without the request pipe, requests would not wait for the exchange
      const problems = requestPipeProblems();
      if (problems.length > 0) throw new WireClientMismatchError(WIRE_EXTENSIONS_VERSION, problems);
    }
    if (options.tls) {
      // a connection that cannot be made secure is not made in the clear instead
      const problems = tlsProblems();
      if (problems.length > 0) throw new WireClientMismatchError(WIRE_EXTENSIONS_VERSION, problems);
    }
    const session = new Session(options);
    await session.open(signal);
    session.startProbe();
    const giveUp = () => void session.close({ timeout: 0 });
    signal?.addEventListener('abort', giveUp, { once: true });
    try {
      if (session.namespace) await session.ensureRoot();
      if (signal?.aborted) throw new SessionClosedError('/');
    } catch (err) {
      await session.close({ timeout: signal?.aborted ? 0 : undefined });
      throw err;
    } finally {
      signal?.removeEventListener('abort', giveUp);
    }
    return session;
  }

  /** The current connection state. */
  get state(): ConnectionState | 'connecting' {
    return this.current;
  }

  /**
   * Whether the connection is up and still sure: the state is `connected` or
   * `reconnected`, and a request sent in the last two thirds of the session
   * timeout was answered (the heartbeat's rule, see `startProbe`), read on
   * the clock at the call. A process whose event loop was blocked past that
   * (a long synchronous computation) sees false at once, before the
   * heartbeat's timer gets to run and drop the connection: the server may
   * have expired the session meanwhile. What holders' `isHeld` and
   * `isLeader` rest on.
   */
  get isConnected(): boolean {
    if (this.current !== 'connected' && this.current !== 'reconnected') return false;
    return performance.now() - this.lastAnsweredAt < deadAfterMs(this.sessionTimeout);
  }

  /** The current session id in hex, in the same form as `Stat.ephemeralOwner` (no leading zeros). */
  get sessionId(): string {
    return this.client.getSessionId().readBigUInt64BE(0).toString(16);
  }

  /** The clock queues on this session judge time on (`SessionOptions.clock`). */
  get clock(): ClockSource {
    return this.options.clock ?? 'zookeeper';
  }

  /** Session timeout granted by the server, ms. */
  get sessionTimeout(): number {
    return this.client.getSessionTimeout();
  }

  /** The current session's id and password (to expire it on purpose in tests). */
  credentials(): { sessionId: Buffer; password: Buffer } {
    return { sessionId: this.client.getSessionId(), password: this.client.getSessionPassword() };
  }

  /** Runs `hook` after every *new* session (not the first); returns an unsubscribe function. */
  onNewSession(hook: NewSessionHook): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  private setState(state: ConnectionState): void {
    this.current = state;
    this.emit('state', state);
  }

  private open(signal?: AbortSignal): Promise<void> {
    const timeoutMs = this.options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const client = this.newClient();
    return new Promise((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.off('failed', failed);
      };
      const fail = (err: Error) => {
        settle();
        this.isClosed = true;
        client.close();
        dropConnection(client);
        reject(err);
      };
      // refused for good (failForGood): the client is closed already
      const failed = (error: ZooKeeperError) => {
        settle();
        reject(error);
      };
      const onAbort = () => fail(new SessionClosedError('/'));
      const timer = setTimeout(
        () => fail(new ConnectTimeoutError(this.options.connectionString, timeoutMs)),
        timeoutMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      client.once('connected', () => {
        settle();
        resolve();
      });
      this.once('failed', failed);
    });
  }

  private newClient(): WireClient {
    const client = wire.createClient(this.options.connectionString, {
      sessionTimeout: this.options.sessionTimeout ?? DEFAULT_SESSION_TIMEOUT_MS,
      spinDelay: 200,
      retries: 0,
    });
    // Fewer writes, copies and wrappers per request (wire.ts); a client it does not know stays as it is.
    tuneClient(client);
    // Error codes the client lacks become errors of their request, not exceptions from its socket.
    acceptUnknownErrorCodes();
    if (this.options.auth) client.addAuthInfo('digest', Buffer.from(this.options.auth));
    discardTornReplies(client);
    onConnectionRefused(client, (code) => this.failForGood(client, (path) => errorFromCode(code, path)));
    if (this.options.tls) {
      useTls(client, this.options.tls as NodeTlsOptions);
      onSecurityFailure(client, (err) => this.failForGood(client, (path) => new ConnectionSecurityError(err, path)));
    }
    if (this.options.sasl) useSasl(client, this.options.sasl);
    this.client = client;
    this.stats.sessionsCreated++;
    const firstSession = this.stats.sessionsCreated === 1;
    let everConnected = false;
    client.on('state', (s) => {
      if (this.client !== client || this.isClosed || this.current === 'closed') return;
      if (s === wire.State.SYNC_CONNECTED) {
        clearTimeout(this.suspendTimer);
        this.linkUp = true;
        this.heardFromServer(performance.now());
        this.startProbe();
        const newSession = !everConnected;
        everConnected = true;
        if (newSession && firstSession) {
          this.setState('connected');
          this.emit('connected');
        } else {
          void this.announceReconnect(newSession);
        }
      } else if (s === wire.State.DISCONNECTED) {
        this.linkUp = false;
        this.setState('suspended');
        this.emit('suspended');
        this.armSuspendTimer(client);
      } else if (s === wire.State.EXPIRED) {
        this.linkUp = false;
        this.replaceExpiredClient(client);
      }
    });
    client.connect();
    return client;
  }

  /** The server refused the connection, or TLS failed for good: see the header (`failed`). */
  private failForGood(client: WireClient, make: (path?: string) => ZooKeeperError): void {
    if (this.client !== client || this.isClosed || this.failure) return;
    const failure = make();
    this.failure = make;
    clearTimeout(this.suspendTimer);
    this.failPending(client, make);
    const pending = [...this.watchers];
    this.watchers.clear();
    for (const w of pending) w({ type: 'sessionLost', path: w.path ?? '/' });
    this.emit('failed', failure);
    void this.close();
  }

  private async announceReconnect(newSession: boolean): Promise<void> {
    if (newSession) {
      for (const hook of [...this.hooks]) {
        try {
          await hook();
        } catch (err) {
          this.emit('hookError', err);
        }
      }
    }
    if (this.isClosed) return;
    this.setState('reconnected');
    this.emit('reconnected', { newSession });
  }

  /**
   * A suspension longer than the session timeout means the server has expired
   * the session (or will the moment it hears from us): declare it lost now,
   * as Curator does, instead of waiting for a server that may be unreachable.
   */
  private armSuspendTimer(client: WireClient): void {
    clearTimeout(this.suspendTimer);
    this.suspendTimer = setTimeout(() => {
      if (this.client === client && this.current === 'suspended') this.replaceExpiredClient(client);
    }, client.getSessionTimeout() || DEFAULT_SESSION_TIMEOUT_MS);
    this.suspendTimer.unref();
  }

  private replaceExpiredClient(expired: WireClient): void {
    if (this.client !== expired || this.isClosed) return;
    clearTimeout(this.suspendTimer);
    expired.close();
    this.failPending(expired, (path) => new SessionExpiredError(path));
    this.setState('lost');
    this.emit('lost');
    const pending = [...this.watchers];
    this.watchers.clear();
    for (const w of pending) w({ type: 'sessionLost', path: w.path ?? '/' });
    this.newClient();
  }

  private async runCloseHooks(waitMs: number): Promise<void> {
    const connected = this.current === 'connected' || this.current === 'reconnected';
    if (!connected || this.closeHooks.size === 0 || waitMs <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    let stop: (() => void) | undefined;
    await Promise.race([
      Promise.allSettled([...this.closeHooks].map((hook) => hook())),
      // a second at most (less when close() has less), and no longer than the connection lasts
      new Promise<void>((resolve) => {
        stop = resolve;
        timer = setTimeout(resolve, waitMs);
        this.once('suspended', resolve);
      }),
    ]);
    clearTimeout(timer);
    if (stop) this.off('suspended', stop);
  }

  /**
   * Closes the session: its ephemeral nodes go at once. Idempotent; concurrent
   * calls share one close. Waits for the server at most `timeout` ms (default
   * 3000: up to a second of it for the work registered with beforeClose, the
   * rest for the server to confirm); past it the connection is dropped, and a
   * server that never got the close expires the session one session timeout
   * later. With 0 the close request is sent and nothing is waited for.
   */
  close(options: { timeout?: number } = {}): Promise<void> {
    this.closing ??= this.shutDown(options.timeout ?? DEFAULT_CLOSE_WAIT_MS);
    return this.closing;
  }

  /**
   * Runs `hook` when close() starts, while the session still works: writes
   * deferred so as to batch them (a connected session waits for them, up to
   * a second). Returns the function that unregisters it.
   */
  beforeClose(hook: () => Promise<unknown>): () => void {
    this.closeHooks.add(hook);
    return () => this.closeHooks.delete(hook);
  }

  private async shutDown(waitMs: number): Promise<void> {
    const deadline = performance.now() + waitMs;
    await this.runCloseHooks(Math.min(CLOSE_HOOKS_MS, waitMs));
    this.isClosed = true;
    clearTimeout(this.suspendTimer);
    clearTimeout(this.probeTimer);
    const client = this.client;
    // The wire client's own 'state' listener must stay: it emits the
    // 'disconnected' awaited here (isClosed already mutes ours). A session
    // that failed for good has no server willing to hear its goodbye.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.failure ? 0 : Math.max(0, deadline - performance.now()));
      client.once('disconnected', () => {
        clearTimeout(timer);
        resolve();
      });
      client.close();
    });
    // Unconfirmed: the link is frozen or the server gone. The socket would stay
    // open for as long as the link lasts, and requests sent on it unanswered.
    dropConnection(client);
    this.failPending(client, (path) => new SessionClosedError(path));
    this.watchers.clear();
    this.setState('closed');
    this.emit('closed');
  }

  /**
   * Rejects every request still waiting on `client`. The wire client fails the
   * requests it has sent when its socket closes, but requests queued while it
   * was disconnected would wait for a client that will never send them: they
   * fail now instead of at the request timeout (they never reached a server).
   */
  private failPending(client: WireClient, error: (path: string) => ZooKeeperError): void {
    for (const p of [...this.pending]) if (p.client === client) p.fail(error);
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * The watches this session has armed that have not fired yet, as
   * `<exists|data|children>:<path>` (paths in the namespace): for
   * diagnostics and tests, since ZooKeeper's `wchp` lists no child watches.
   */
  armedWatches(): string[] {
    return [...this.armed.keys()];
  }

  // ---- paths -------------------------------------------------------------

  /** The absolute server path of a namespace path; a malformed path is refused (it could escape the namespace). */
  private abs(path: string): string {
    validatePath(path);
    if (!this.namespace) return path;
    return path === '/' ? this.namespace : this.namespace + path;
  }

  /** The namespace path of a server path. */
  private rel(path: string): string {
    if (!this.namespace) return path;
    const rest = path.slice(this.namespace.length);
    return rest === '' ? '/' : rest;
  }

  /**
   * Creates the namespace node under the session's ACL, and its missing
   * ancestors open: under the creator's ACL, a parent shared by several
   * tenants' namespaces would let only the first tenant create its own.
   * Existing nodes are left as they are (an operator may have made them
   * with a stricter ACL).
   */
  private async ensureRoot(): Promise<void> {
    const parts = this.namespace.split('/').filter(Boolean);
    const openAcl = wireAcl(OPEN_ACL);
    let path = '';
    for (const [i, part] of parts.entries()) {
      path += `/${part}`;
      const target = path;
      const acl = i === parts.length - 1 ? this.acl : openAcl;
      await withRetry(
        () => this.rawCreate(target, undefined, 'persistent', target, acl).catch(ignoreExists),
        this.options.retry,
      );
    }
  }

  // ---- the request pipe ---------------------------------------------------

  /**
   * A request left unanswered for the whole request timeout while the client
   * believes it is connected means a silent partition: the wire client has no
   * read timeout of its own and would never notice. Dropping the socket makes
   * it reconnect, so the state goes `suspended` (and `lost` if the session
   * cannot be resumed in time) and recipes react as to any disconnection.
   */
  private dropIfSilent(client: WireClient): void {
    if (this.isClosed || client !== this.client) return;
    if (this.current === 'connected' || this.current === 'reconnected') dropConnection(client);
  }

  /**
   * The heartbeat, ZooKeeper's own rule: a session that has sent nothing for
   * a third of the negotiated session timeout sends a cheap read, and a
   * connection over which no request sent in the last two thirds has been
   * answered is dead. The server expires a session one session timeout after
   * it last heard from it, and it heard from this one no earlier than the
   * send of the newest answered request: so the connection is dropped (and
   * `suspended` emitted, the wire client reconnecting at once) at least a
   * third of a session timeout before the server can expire the session,
   * whatever the request timeout, even when the link dies silently. Measured
   * on this process's monotonic clock only. The price: a server slower than
   * two thirds of the session timeout to answer is taken for gone (the
   * session reconnects, and resumes if it can).
   */
  private startProbe(): void {
    clearTimeout(this.probeTimer);
    if (this.isClosed || !this.linkUp) return; // armed again on the next connection
    const timeout = this.sessionTimeout || DEFAULT_SESSION_TIMEOUT_MS;
    const probeAfter = Math.floor(timeout / 3);
    const deadAfter = deadAfterMs(timeout);
    const now = performance.now();
    const unanswered = now - this.lastAnsweredAt;
    if (unanswered >= deadAfter) {
      dropConnection(this.client);
      return;
    }
    const quiet = now - this.lastRequestAt;
    if (quiet >= probeAfter && !this.probeInFlight) {
      this.probeInFlight = true;
      const root = this.abs('/');
      this.call<unknown>('/', (c, cb) => c.exists(root, cb))
        .catch(() => undefined)
        .finally(() => {
          this.probeInFlight = false;
        });
    }
    const sinceSend = now - this.lastRequestAt;
    const nextProbe = sinceSend >= probeAfter ? probeAfter : probeAfter - sinceSend;
    const wait = Math.max(1, Math.min(nextProbe, deadAfter - unanswered));
    this.probeTimer = setTimeout(() => this.startProbe(), Math.ceil(wait));
    this.probeTimer.unref();
  }

  /** A reply (or the handshake) came for a request sent at `sentAt`: the server heard from us then. */
  private heardFromServer(sentAt: number): void {
    if (sentAt > this.lastAnsweredAt) this.lastAnsweredAt = sentAt;
  }

  /** Sends one request with a timeout, mapping wire errors to typed errors. */
  private call<T>(path: string, send: (client: WireClient, cb: Callback<T>) => void): Promise<T> {
    if (this.failure) return Promise.reject(this.failure(path));
    if (this.isClosed) return Promise.reject(new SessionClosedError(path));
    this.stats.requests++;
    const sentAt = performance.now();
    this.lastRequestAt = sentAt;
    const timeoutMs = this.options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const client = this.client;
    return new Promise<T>((resolve, reject) => {
      const entry = {
        client,
        fail: (make: (path: string) => ZooKeeperError) => settle(make(path)),
      };
      const settle = (err: unknown, result?: T) => {
        clearTimeout(timer);
        this.pending.delete(entry);
        if (err) reject(err);
        else resolve(result as T);
      };
      const timer = setTimeout(() => {
        settle(new RequestTimeoutError(timeoutMs, path));
        this.dropIfSilent(client);
      }, timeoutMs);
      this.pending.add(entry);
      try {
        send(client, (err, result) => {
          if (client === this.client && isServerReply(err)) this.heardFromServer(sentAt);
          settle(err ? toTypedError(err, path) : undefined, result);
        });
      } catch (err) {
        settle(new BadArgumentsError(err instanceof Error ? err.message : String(err), path));
      }
    });
  }

  /**
   * Runs a read that may set a one-shot watch. One entry per call, shared by
   * all its attempts, so that a watch set by a retried (or late) attempt
   * fires at most once; a call that fails sets no watch. The same watcher
   * function armed again on the same path and kind before it fired is not
   * registered twice (the server keeps one watch anyway): callers that re-arm
   * a stable watcher on every poll do not pile up listeners.
   */
  private async watched<T>(
    kind: 'exists' | 'data' | 'children',
    path: string,
    watcher: Watcher | undefined,
    run: (w?: WireWatcher) => Promise<T>,
  ): Promise<T> {
    if (!watcher) return run(undefined);
    const key = `${kind}:${path}`;
    const armed = this.armed.get(key) ?? new Set<Watcher>();
    if (armed.has(watcher)) return run(undefined);
    armed.add(watcher);
    this.armed.set(key, armed);
    const disarm = () => {
      armed.delete(watcher);
      if (armed.size === 0 && this.armed.get(key) === armed) this.armed.delete(key);
    };
    const entry: Watcher & { path?: string } = (event) => {
      disarm();
      watcher(event);
    };
    entry.path = path;
    this.watchers.add(entry);
    const wireWatcher: WireWatcher = (e) => {
      if (!this.watchers.delete(entry)) return;
      disarm();
      watcher({ type: eventType(e), path: this.rel(e.getPath()) });
    };
    try {
      return await run(wireWatcher);
    } catch (err) {
      this.watchers.delete(entry);
      disarm();
      throw err;
    }
  }

  private checkData(data: Buffer | undefined, path: string): void {
    if (data && data.length > MAX_DATA_BYTES) {
      throw new BadArgumentsError(`node data of ${data.length} bytes exceeds the ${MAX_DATA_BYTES}-byte limit`, path);
    }
  }

  /** `errorPath` is the path errors report: the caller's, inside the namespace. */
  private rawCreate(
    absPath: string,
    data: Buffer | undefined,
    mode: CreateMode,
    errorPath = absPath,
    acl = this.acl,
  ): Promise<string> {
    return this.call<string>(errorPath, (c, cb) =>
      data ? c.create(absPath, data, acl, wireMode(mode), cb) : c.create(absPath, acl, wireMode(mode), cb),
    );
  }

  // ---- operations ---------------------------------------------------------

  /** Creates a node; resolves with its path (sequential modes append the sequence number). Not retried. */
  async create(path: string, data?: Buffer, mode: CreateMode = 'persistent'): Promise<string> {
    this.checkData(data, path);
    return this.rel(await this.rawCreate(this.abs(path), data, mode, path));
  }

  /**
   * Creates a sequential node safely under connection loss. The name becomes
   * `<prefix><id>-<sequence>`, where `id` is unique to this call: when the
   * reply is lost, the parent is listed and a node carrying the id is this
   * call's own. Resolves with the created path.
   */
  async createProtected(
    pathPrefix: string,
    data?: Buffer,
    mode: 'persistent_sequential' | 'ephemeral_sequential' = 'persistent_sequential',
  ): Promise<string> {
    const marker = `${lastSegment(pathPrefix)}${randomBytes(PROTECT_ID_BYTES).toString('hex')}-`;
    const parent = parentOf(pathPrefix);
    const base = parent === '/' ? '' : parent;
    const full = `${base}/${marker}`;
    // The server answering the look-up may be a follower behind the one that
    // applied the create (a new session after expiry may land anywhere):
    // sync first, or a missed node would be created a second time.
    // An ephemeral node is ours only while this session owns it: one an expired session's
    // create left behind goes with that session, and taking it would hand one lock to two holders.
    const findOwn = async () => {
      await this.sync(parent);
      const name = (await this.getChildren(parent)).find((n) => n.startsWith(marker));
      if (!name || mode !== 'ephemeral_sequential') return name;
      const stat = await this.exists(`${base}/${name}`);
      return stat?.ephemeralOwner === this.sessionId ? name : undefined;
    };
    // Any failed attempt may have created the node (a lost reply, or a session
    // that expired after the server applied the create): every retry looks for
    // it first, and only creates again when it is not there.
    return withRetry(async (attempt) => {
      if (attempt > 0) {
        const own = await findOwn();
        if (own) return `${base}/${own}`;
      }
      try {
        return await this.create(full, data, mode);
      } catch (err) {
        if (!isOutcomeUnknown(err)) throw err;
        const own = await findOwn();
        if (own) return `${base}/${own}`;
        throw err;
      }
    }, this.options.retry);
  }

  /**
   * Waits until the server this session talks to has applied every write
   * committed before the call, so that a read sent after it sees them all
   * (ZooKeeper's `sync`, which the wire client does not offer).
   *
   * Done as a write barrier: a `multi` holding one `check` of `path` at any
   * version. Every write, even one that fails, is ordered by the leader and
   * answered by this server only once it has applied it and everything
   * committed before it. A missing `path` is fine for that reason (the failed
   * check is ordered all the same). `path` only names the request in errors.
   * It changes nothing, so it is retried on connection loss.
   *
   * Needed where a read must not miss a write made elsewhere, typically by a
   * new session (after expiry), which may connect to a follower that lags
   * behind: the same session reconnecting cannot go backwards (the server
   * refuses a client that has seen a later zxid).
   */
  async sync(path = '/'): Promise<void> {
    await withRetry(
      () =>
        this.multi([{ op: 'check', path, version: -1 }]).then(
          () => undefined,
          (err) => {
            if (!(err instanceof NoNodeError)) throw err;
          },
        ),
      this.options.retry,
    );
  }

  /** Deletes a node, if `version` matches (-1: any). Not retried. */
  async delete(path: string, version = -1): Promise<void> {
    await this.call<void>(path, (c, cb) => c.remove(this.abs(path), version, cb));
  }

  /** The node's stat, or null when it does not exist. A watch fires on create, delete or change. */
  exists(path: string, options: { watch?: Watcher } = {}): Promise<Stat | null> {
    return this.watched('exists', path, options.watch, (w) =>
      withRetry(
        () =>
          this.call<zkStat | null>(path, (c, cb) =>
            w ? c.exists(this.abs(path), w, cb) : c.exists(this.abs(path), cb),
          ).then((s) => (s ? toStat(s) : null)),
        this.options.retry,
      ),
    );
  }

  /** The node's data and stat. A watch fires on change or delete. */
  getData(path: string, options: { watch?: Watcher } = {}): Promise<{ data: Buffer; stat: Stat }> {
    return this.watched('data', path, options.watch, (w) =>
      withRetry(
        () =>
          this.call<{ data: Buffer; stat: Stat }>(path, (c, cb) => {
            const reply = (err: unknown, data?: Buffer, stat?: zkStat) =>
              err ? cb(err) : cb(null, { data: data ?? Buffer.alloc(0), stat: toStat(stat as zkStat) });
            if (w) c.getData(this.abs(path), w, reply);
            else c.getData(this.abs(path), reply);
          }),
        this.options.retry,
      ),
    );
  }

  /** Writes data if `version` matches (-1: any); resolves with the new stat. Not retried. */
  async setData(path: string, data: Buffer, version = -1): Promise<Stat> {
    this.checkData(data, path);
    const stat = await this.call<zkStat>(path, (c, cb) => c.setData(this.abs(path), data, version, cb));
    return toStat(stat);
  }

  /** The names of the node's children (unsorted). A watch fires when children are added or removed. */
  async getChildren(path: string, options: { watch?: Watcher } = {}): Promise<string[]> {
    const names = await this.watched('children', path, options.watch, (w) =>
      withRetry(
        () =>
          this.call<string[]>(path, (c, cb) =>
            w ? c.getChildren(this.abs(path), w, cb) : c.getChildren(this.abs(path), cb),
          ),
        this.options.retry,
      ),
    );
    if (names.length > this.stats.maxChildren) {
      this.stats.maxChildren = names.length;
      this.stats.maxChildrenPath = path;
    }
    return names;
  }

  /**
   * Runs `ops` atomically: all apply or none. On failure the error is the
   * failing operation's (`err.opIndex` says which). Refused before sending
   * when the request would pass ZooKeeper's packet limit. Not retried.
   */
  async multi(ops: readonly Op[]): Promise<OpResult[]> {
    if (ops.length === 0) return [];
    let bytes = MULTI_OVERHEAD_BYTES;
    for (const op of ops) bytes += opBytes(op, this.namespace);
    if (bytes > MULTI_BYTE_LIMIT) {
      throw new BadArgumentsError(`multi of ${ops.length} ops is ~${bytes} bytes, past the ZooKeeper packet limit`);
    }
    // each op built field by field (a spread copies whatever else the caller's op carries)
    const wireOps = ops.map((op): WireOp => {
      const path = this.abs(op.path);
      switch (op.op) {
        case 'create':
          return { op: 'create', path, data: op.data, mode: wireMode(op.mode ?? 'persistent') };
        case 'setData':
          return { op: 'setData', path, data: op.data, version: op.version ?? -1 };
        case 'delete':
          return { op: 'delete', path, version: op.version ?? -1 };
        default:
          return { op: 'check', path, version: op.version };
      }
    });
    let results: WriteResult[];
    try {
      results = await this.call<WriteResult[]>(ops[0]?.path ?? '/', (c, cb) =>
        sendMulti(c, wireOps, this.acl, (err: unknown, res?: WriteResult[]) => {
          if (err && res && typeof err === 'object') Object.assign(err, { results: res });
          cb(err, res);
        }),
      );
    } catch (err) {
      throw this.multiError(err, ops);
    }
    return results.map((r, i) => {
      const op = ops[i] as Op;
      if (op.op === 'create') return { op: 'create', path: this.rel(r.path ?? '') };
      if (op.op === 'setData') return { op: 'setData', stat: r.stat as Stat };
      return { op: op.op };
    });
  }

  /**
   * Reads many nodes in one request (ZooKeeper's read-only multi, 3.6+):
   * each result is the read's value (`{ ok: true, data, stat }` for a
   * getData, `{ ok: true, children }` for a getChildren) or its own typed
   * error (`{ ok: false, error }`, e.g. a NoNodeError): unlike `multi`, a
   * missing node fails only its own read. The request is ordered with the
   * session's others. Retried like every read. No watches.
   *
   * The request is refused before sending past the packet limit (estimated
   * by `readOpBytes`). The reply carries every node's data: keep a batch's
   * data under ~1 MB (`readMultiBatchSize(maxDataBytes)` reads per call,
   * e.g. 900 of 1 KB) and its listings bounded.
   */
  async readMulti<const R extends readonly ReadOp[]>(reads: R): Promise<ReadResults<R>> {
    if (reads.length === 0) return [] as unknown as ReadResults<R>;
    let bytes = MULTI_OVERHEAD_BYTES;
    for (const read of reads) {
      const op: string = read.op;
      if (op !== 'getData' && op !== 'getChildren') {
        throw new BadArgumentsError(`readMulti takes getData and getChildren reads, not '${op}'`, read.path);
      }
      bytes += readOpBytes(read, this.namespace);
    }
    if (bytes > MULTI_BYTE_LIMIT) {
      throw new BadArgumentsError(
        `readMulti of ${reads.length} reads is ~${bytes} bytes, past the ZooKeeper packet limit`,
      );
    }
    const wireReads = reads.map((r) => ({ op: r.op, path: this.abs(r.path) }));
    assertReadMultiSupported();
    const first = (reads[0] as ReadOp).path;
    const results = await withRetry(
      () => this.call<WireReadResult[] | undefined>(first, (c, cb) => sendReadMulti(c, wireReads, cb)),
      this.options.retry,
    );
    if (!results || results.length !== reads.length) throw errorFromCode(ZK_CODES.MARSHALLING_ERROR, first);
    return results.map((r, i) => this.readResult(r, reads[i] as ReadOp)) as unknown as ReadResults<R>;
  }

  private readResult(r: WireReadResult, read: ReadOp): ReadResult {
    if (r.type === -1) return { ok: false, error: errorFromCode(r.err, read.path) };
    if (r.type === 4) return { ok: true, data: r.data, stat: r.stat };
    if (r.children.length > this.stats.maxChildren) {
      this.stats.maxChildren = r.children.length;
      this.stats.maxChildrenPath = read.path;
    }
    return { ok: true, children: r.children };
  }

  /** Re-types a multi failure as the failing op's error, with its index and path. */
  private multiError(err: unknown, ops: readonly Op[]): unknown {
    const typed = err as ZooKeeperError;
    const results = (err as { results?: { err?: number }[] }).results;
    if (!results || !('zkCode' in typed)) return err;
    const index = results.findIndex((r) => r.err !== undefined && r.err !== 0 && r.err !== -2);
    if (index < 0) return err;
    const failed = errorFromCode(results[index]?.err as number, ops[index]?.path);
    failed.opIndex = index;
    return failed;
  }

  // ---- helpers built on the operations -------------------------------------

  /** Creates `path` and any missing parents (persistent, empty). Idempotent and retried. */
  async ensurePath(path: string): Promise<void> {
    const parts = path.split('/').filter(Boolean);
    let current = '';
    for (const part of parts) {
      current += `/${part}`;
      const target = current;
      await withRetry(() => this.create(target).then(() => undefined, ignoreExists), this.options.retry);
    }
  }

  /** Deletes `path` and everything under it; a missing node is fine. */
  async deleteRecursive(path: string): Promise<void> {
    let children: string[];
    try {
      children = await this.getChildren(path);
    } catch (err) {
      if (err instanceof NoNodeError) return;
      throw err;
    }
    const base = path === '/' ? '' : path;
    for (let i = 0; i < children.length; i += 64) {
      await Promise.all(children.slice(i, i + 64).map((c) => this.deleteRecursive(`${base}/${c}`)));
    }
    if (path === '/') return;
    await this.delete(path).catch((err) => {
      if (!(err instanceof NoNodeError)) throw err;
    });
  }

  /** Runs `fn` under the session's retry policy (for callers' own idempotent sequences). */
  retry<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
    return withRetry(fn, this.options.retry, isRetryable);
  }
}

type zkStat = Parameters<typeof toStat>[0];
type WireWatcher = (e: InstanceType<typeof wire.Event>) => void;

/** Maps a wire error to its typed error; a multi's per-op results ride along for `multiError`. */
function toTypedError(err: unknown, path: string): unknown {
  const code = wireErrorCode(err);
  if (code === undefined) return err;
  const typed = errorFromCode(code, path);
  const results = (err as { results?: unknown }).results;
  if (results) (typed as unknown as { results: unknown }).results = results;
  return typed;
}

/** How long a connection may go without an answer to a request sent since before it is taken for dead. */
function deadAfterMs(sessionTimeout: number): number {
  return Math.floor(((sessionTimeout || DEFAULT_SESSION_TIMEOUT_MS) * 2) / 3);
}

/** Whether a wire callback's outcome came from the server (not from a connection that closed under it). */
function isServerReply(err: unknown): boolean {
  if (!err) return true;
  const code = wireErrorCode(err);
  return code !== undefined && code !== ZK_CODES.CONNECTION_LOSS && code !== ZK_CODES.SESSION_EXPIRED;
}

function ignoreExists(err: unknown): void {
  if (!(err instanceof NodeExistsError)) throw err;
}

function normalizeNamespace(ns: string | undefined): string {
  if (!ns || ns === '/') return '';
  const trimmed = `/${ns.replace(/^\/+|\/+$/g, '')}`;
  if (trimmed.split('/').some((seg, i) => i > 0 && (seg === '' || seg === '.' || seg === '..'))) {
    throw new BadArgumentsError(`invalid namespace '${ns}'`);
  }
  return trimmed;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
const BAD_PATH = /\/(?:\.{1,2})?(?:\/|$)|[\u0000-\u001f\u007f]/;

/** Refuses what ZooKeeper would: relative, empty or dotted segments, a trailing slash, control characters. */

function validatePath(path: string): void {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new BadArgumentsError('a path must be a string starting with /', String(path));
  }
  if (path === '/') return;
  // one scan per path (every op of every request is checked): an empty, `.` or `..` segment, or a control character
  if (BAD_PATH.test(path)) {
    throw new BadArgumentsError('invalid path (empty, . or .. segment, trailing slash or control character)', path);
  }
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

function lastSegment(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
