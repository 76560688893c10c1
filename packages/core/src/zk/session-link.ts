/**
 * A session's connection, for the whole of its life: the wire client made
 * again after every expiry, the connection states as typed events, the
 * heartbeat, requests sent with a timeout and failed for good with the
 * session, and the close.
 *
 * - connection states (`connected`, `suspended`, `reconnected`, `lost`,
 *   `closed`) as typed events; after expiry (or a suspension longer than the
 *   session timeout, when the server must have expired it) a new session is
 *   built at once and `onNewSession` hooks run so that recipes re-create
 *   their ephemeral nodes; pending watches get a `sessionLost` event;
 * - a server that refuses the connection itself (it requires authentication
 *   this session has not done, -124, or answers an auth packet, a SASL token
 *   or a ping with an error), or a TLS connection that cannot be made secure,
 *   fails the session for good: `failed` carries the typed error, pending and
 *   later requests reject with it, and the session closes, where reconnecting
 *   would only be refused again.
 */

import type { EventEmitter } from 'node:events';
// node:timers' own functions, not the globals: a test that fakes the global
// timers (sinon, node:test's mock timers) must not freeze request timeouts,
// the heartbeat or the suspension timer
import { clearTimeout, setTimeout } from 'node:timers';
import { CREATOR_ACL, OPEN_ACL } from './acl.js';
import { createWireClient } from './client-setup.js';
import {
  ConnectionSecurityError,
  ConnectTimeoutError,
  errorFromCode,
  SessionClosedError,
  SessionExpiredError,
  type ZooKeeperError,
} from './errors.js';
import { Heartbeat } from './heartbeat.js';
import { normalizeNamespace, validatePath } from './paths.js';
import { type Callback, Requests } from './requests.js';
import { withRetry } from './retry.js';
import {
  DEFAULT_CLOSE_WAIT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  type NewSessionHook,
  type SessionEvents,
  type SessionOptions,
  type SessionStats,
} from './session-types.js';
import { ignoreExists } from './tree.js';
import type { ConnectionState, CreateMode } from './types.js';
import { Watches } from './watches.js';
import { dropConnection, type WireClient, wire, wireAcl, wireMode } from './wire.js';

/** Longest wait of close() for the work registered with beforeClose, ms. */
const CLOSE_HOOKS_MS = 1000;

/** The connection's life of a `Session` (which is `events`; its operations: session.ts). */
/** Shortest wait for a reconnection's handshake before another attempt starts, ms. */
const MIN_HANDSHAKE_WAIT_MS = 1000;

export class SessionLink {
  readonly namespace: string;
  readonly stats: SessionStats = { requests: 0, maxChildren: 0, sessionsCreated: 0 };
  private client!: WireClient;
  private current: ConnectionState | 'connecting' = 'connecting';
  /** Changes of the wire client's connection so far (any state it reports, a new client). */
  private connections = 0;
  readonly acl: ReturnType<typeof wireAcl>;
  private readonly hooks = new Set<NewSessionHook>();
  readonly watches = new Watches((path) => this.rel(path));
  private readonly requests = new Requests({
    refusal: (path) => (this.failure ? this.failure(path) : this.isClosed ? new SessionClosedError(path) : undefined),
    client: () => this.client,
    timeoutMs: () => this.options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS,
    sent: () => {
      this.stats.requests++;
      return this.heartbeat.sent();
    },
    answered: (sentAt) => this.heartbeat.heard(sentAt),
    unanswered: (client) => this.dropIfSilent(client),
  });
  private suspendTimer: NodeJS.Timeout | undefined;
  readonly heartbeat = new Heartbeat({
    beating: () => !this.isClosed && this.linkUp,
    sessionTimeout: () => this.sessionTimeout,
    drop: () => dropConnection(this.client),
    probe: () => {
      const root = this.abs('/');
      return this.call<unknown>('/', (c, cb) => c.exists(root, cb));
    },
  });
  /** The wire client is connected (a handshake answered, no disconnection since). */
  private linkUp = false;
  private isClosed = false;
  /** Why the session failed for good (see `failed`): the error each request then gets, for its path. */
  private failure: ((path?: string) => ZooKeeperError) | undefined;
  private closing: Promise<void> | undefined;
  private readonly closeHooks = new Set<() => Promise<unknown>>();

  constructor(
    private readonly options: SessionOptions,
    private readonly events: EventEmitter<SessionEvents>,
  ) {
    this.namespace = normalizeNamespace(options.namespace);
    const acl = options.acl ?? (options.auth || options.sasl ? 'creator' : 'open');
    this.acl = wireAcl(acl === 'open' ? OPEN_ACL : acl === 'creator' ? CREATOR_ACL : acl);
  }

  /** See Session: the link's state, sureness, session id, timeout and credentials. */
  get state(): ConnectionState | 'connecting' {
    return this.current;
  }

  get isConnected(): boolean {
    if (this.current !== 'connected' && this.current !== 'reconnected') return false;
    return this.heartbeat.isAlive(this.sessionTimeout);
  }

  get sessionId(): string {
    return this.client.getSessionId().readBigUInt64BE(0).toString(16);
  }

  /** See Session: moves on at every change of the wire client's connection. */
  get connection(): number {
    return this.connections;
  }

  get sessionTimeout(): number {
    return this.client.getSessionTimeout();
  }

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
    this.events.emit('state', state);
  }

  open(signal?: AbortSignal): Promise<void> {
    const timeoutMs = this.options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const client = this.newClient();
    return new Promise((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.events.off('failed', failed);
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
      this.events.once('failed', failed);
    });
  }

  private newClient(): WireClient {
    const client = createWireClient(this.options, {
      refused: (code) => this.failForGood(client, (path) => errorFromCode(code, path)),
      insecure: (err) => this.failForGood(client, (path) => new ConnectionSecurityError(err, path)),
    });
    this.client = client;
    this.connections++;
    this.stats.sessionsCreated++;
    const firstSession = this.stats.sessionsCreated === 1;
    let everConnected = false;
    client.on('state', (s) => {
      this.connections++;
      if (this.client !== client || this.isClosed || this.current === 'closed') return;
      if (s === wire.State.SYNC_CONNECTED) {
        clearTimeout(this.suspendTimer);
        this.linkUp = true;
        this.heartbeat.heard(performance.now());
        this.heartbeat.start();
        const newSession = !everConnected;
        everConnected = true;
        if (newSession && firstSession) {
          this.setState('connected');
          this.events.emit('connected');
        } else {
          void this.announceReconnect(newSession);
        }
      } else if (s === wire.State.DISCONNECTED) {
        this.linkUp = false;
        this.setState('suspended');
        this.events.emit('suspended');
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
    this.requests.failPending(client, make);
    this.watches.loseAll();
    this.events.emit('failed', failure);
    void this.close();
  }

  private async announceReconnect(newSession: boolean): Promise<void> {
    if (newSession) {
      for (const hook of [...this.hooks]) {
        try {
          await hook();
        } catch (err) {
          this.events.emit('hookError', err);
        }
      }
    }
    if (this.isClosed) return;
    this.setState('reconnected');
    this.events.emit('reconnected', { newSession });
  }

  /**
   * A suspension longer than the session timeout means the server has expired
   * the session (or will the moment it hears from us): declare it lost now,
   * as Curator does, instead of waiting for a server that may be unreachable.
   * Meanwhile, every third of it, a connection attempt still unanswered is
   * dropped so that another starts: the wire client bounds an attempt's TCP
   * connect but not its handshake, and one accepted with nothing behind it
   * (a proxy or balancer whose server is down or still starting) would
   * otherwise hold the session until it is lost.
   */
  private armSuspendTimer(client: WireClient): void {
    clearTimeout(this.suspendTimer);
    const timeout = client.getSessionTimeout() || DEFAULT_SESSION_TIMEOUT_MS;
    const deadline = performance.now() + timeout;
    const attemptMs = Math.max(MIN_HANDSHAKE_WAIT_MS, Math.floor(timeout / 3));
    const check = () => {
      if (this.client !== client || this.current !== 'suspended') return;
      const left = deadline - performance.now();
      if (left <= 0) {
        this.replaceExpiredClient(client);
        return;
      }
      dropConnection(client);
      this.suspendTimer = setTimeout(check, Math.min(attemptMs, left));
      this.suspendTimer.unref();
    };
    this.suspendTimer = setTimeout(check, Math.min(attemptMs, timeout));
    this.suspendTimer.unref();
  }

  private replaceExpiredClient(expired: WireClient): void {
    if (this.client !== expired || this.isClosed) return;
    clearTimeout(this.suspendTimer);
    expired.close();
    this.requests.failPending(expired, (path) => new SessionExpiredError(path));
    this.setState('lost');
    this.events.emit('lost');
    this.watches.loseAll();
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
        this.events.once('suspended', resolve);
      }),
    ]);
    clearTimeout(timer);
    if (stop) this.events.off('suspended', stop);
  }

  /** See Session.close: one close, however many calls. */
  close(options: { timeout?: number } = {}): Promise<void> {
    this.closing ??= this.shutDown(options.timeout ?? DEFAULT_CLOSE_WAIT_MS);
    return this.closing;
  }

  /** Runs `hook` when close() starts; returns the function that unregisters it. */
  beforeClose(hook: () => Promise<unknown>): () => void {
    this.closeHooks.add(hook);
    return () => this.closeHooks.delete(hook);
  }

  private async shutDown(waitMs: number): Promise<void> {
    const deadline = performance.now() + waitMs;
    await this.runCloseHooks(Math.min(CLOSE_HOOKS_MS, waitMs));
    this.isClosed = true;
    clearTimeout(this.suspendTimer);
    this.heartbeat.stop();
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
    this.requests.failPending(client, (path) => new SessionClosedError(path));
    this.watches.clear();
    this.setState('closed');
    this.events.emit('closed');
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Creates the namespace node under the session's ACL, and its missing
   * ancestors open: under the creator's ACL, a parent shared by several
   * tenants' namespaces would let only the first tenant create its own.
   * Existing nodes are left as they are (an operator may have made them
   * with a stricter ACL).
   */
  async ensureNamespace(): Promise<void> {
    const parts = this.namespace.split('/').filter(Boolean);
    const openAcl = wireAcl(OPEN_ACL);
    let path = '';
    for (const [i, part] of parts.entries()) {
      path += `/${part}`;
      const target = path;
      const acl = i === parts.length - 1 ? this.acl : openAcl;
      await withRetry(
        () => this.create(target, undefined, 'persistent', target, acl).catch(ignoreExists),
        this.options.retry,
      );
    }
  }

  /** Creates `absPath`, a server path; `errorPath` is the path errors report: the caller's, inside the namespace. */
  create(
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

  // ---- paths -------------------------------------------------------------

  /** The absolute server path of a namespace path; a malformed path is refused (it could escape the namespace). */
  abs(path: string): string {
    validatePath(path);
    if (!this.namespace) return path;
    return path === '/' ? this.namespace : this.namespace + path;
  }

  /** The namespace path of a server path. */
  rel(path: string): string {
    if (!this.namespace) return path;
    const rest = path.slice(this.namespace.length);
    return rest === '' ? '/' : rest;
  }

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

  /** Sends one request with a timeout, mapping wire errors to typed errors. */
  call<T>(path: string, send: (client: WireClient, cb: Callback<T>) => void): Promise<T> {
    return this.requests.call(path, send);
  }
}
