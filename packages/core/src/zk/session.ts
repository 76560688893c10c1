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
 * - a heartbeat bounded by the session timeout (heartbeat.ts): a link that
 *   dies silently is dropped, and `suspended` emitted, at least a third of a
 *   session timeout before the server can expire the session;
 * - connection states as typed events, a new session built at once after
 *   expiry, and a session failed for good when the server refuses the
 *   connection itself (session-link.ts);
 * - `readMulti`, ZooKeeper's read-only multi (3.6+), which the wire client
 *   lacks: many getData / getChildren in one request, each failing alone;
 * - a namespace (every path is relative to it) and digest auth, with the ACL
 *   applied to every node this session creates, the namespace node included;
 *   missing ancestors of the namespace node are created open, like the root,
 *   so that tenants with namespaces under one parent can each create theirs;
 * - TLS (`tls`) and SASL DIGEST-MD5 (`sasl`, before any other request) on
 *   every connection, through wire.ts.
 */

import { EventEmitter } from 'node:events';
import { checkWireExtensions } from './client-setup.js';
import { BadArgumentsError, errorFromCode, NoNodeError, SessionClosedError, ZK_CODES } from './errors.js';
import { MAX_DATA_BYTES } from './limits.js';
import { checkMultiSize, checkReads, multiError, toOpResults, toReadResult, toWireOps } from './multi-ops.js';
import type { ReadOp, ReadResults } from './multi-size.js';
import { createProtected } from './protected-create.js';
import { isRetryable, withRetry } from './retry.js';
import { saslOptionsProblem } from './sasl.js';
import { SessionLink } from './session-link.js';
import type { ClockSource, NewSessionHook, SessionEvents, SessionOptions, SessionStats } from './session-types.js';
import { tlsOptionsProblem } from './tls.js';
import { deleteRecursive, ensurePath } from './tree.js';
import type { ConnectionState, CreateMode, Op, OpResult, Stat, Watcher } from './types.js';
import {
  assertReadMultiSupported,
  sendMulti,
  sendReadMulti,
  toStat,
  type WireReadResult,
  type WriteResult,
} from './wire.js';

export {
  MULTI_BYTE_LIMIT,
  MULTI_OVERHEAD_BYTES,
  opBytes,
  READ_REPLY_OVERHEAD_BYTES,
  type ReadOp,
  type ReadResult,
  type ReadResults,
  readMultiBatchSize,
  readOpBytes,
} from './multi-size.js';
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

export class Session extends EventEmitter<SessionEvents> {
  readonly namespace: string;
  readonly stats: SessionStats;
  /** The connection's life: its states, the heartbeat, requests and watches (session-link.ts). */
  private readonly link: SessionLink;

  private constructor(private readonly options: SessionOptions) {
    super();
    this.link = new SessionLink(options, this);
    this.namespace = this.link.namespace;
    this.stats = this.link.stats;
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
    checkWireExtensions(options);
    const session = new Session(options);
    await session.link.open(signal);
    session.link.heartbeat.start();
    const giveUp = () => void session.close({ timeout: 0 });
    signal?.addEventListener('abort', giveUp, { once: true });
    try {
      if (session.namespace) await session.link.ensureNamespace();
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
    return this.link.state;
  }

  /**
   * Whether the connection is up and still sure: the state is `connected` or
   * `reconnected`, and a request sent in the last two thirds of the session
   * timeout was answered (the heartbeat's rule, see heartbeat.ts), read on
   * the clock at the call. A process whose event loop was blocked past that
   * (a long synchronous computation) sees false at once, before the
   * heartbeat's timer gets to run and drop the connection: the server may
   * have expired the session meanwhile. What holders' `isHeld` and
   * `isLeader` rest on.
   */
  get isConnected(): boolean {
    return this.link.isConnected;
  }

  /** The current session id in hex, in the same form as `Stat.ephemeralOwner` (no leading zeros). */
  get sessionId(): string {
    return this.link.sessionId;
  }

  /**
   * The number of the connection requests go out on now: it moves on
   * whenever the wire client's connection changes (dropped, made again,
   * a new session). Requests handed over while it reads n, whose replies
   * came while it still reads n, were sent on one connection in the order
   * they were made and answered in that order, none of them sent again.
   */
  get connection(): number {
    return this.link.connection;
  }

  /** The clock queues on this session judge time on (`SessionOptions.clock`). */
  get clock(): ClockSource {
    return this.options.clock ?? 'zookeeper';
  }

  /** Session timeout granted by the server, ms. */
  get sessionTimeout(): number {
    return this.link.sessionTimeout;
  }

  /** The current session's id and password (to expire it on purpose in tests). */
  credentials(): { sessionId: Buffer; password: Buffer } {
    return this.link.credentials();
  }

  /** Runs `hook` after every *new* session (not the first); returns an unsubscribe function. */
  onNewSession(hook: NewSessionHook): () => void {
    return this.link.onNewSession(hook);
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
    return this.link.close(options);
  }

  /**
   * Runs `hook` when close() starts, while the session still works: writes
   * deferred so as to batch them (a connected session waits for them, up to
   * a second). Returns the function that unregisters it.
   */
  beforeClose(hook: () => Promise<unknown>): () => void {
    return this.link.beforeClose(hook);
  }

  get closed(): boolean {
    return this.link.closed;
  }

  /**
   * The watches this session has armed that have not fired yet, as
   * `<exists|data|children>:<path>` (paths in the namespace): for
   * diagnostics and tests, since ZooKeeper's `wchp` lists no child watches.
   */
  armedWatches(): string[] {
    return this.link.watches.keys();
  }

  private checkData(data: Buffer | undefined, path: string): void {
    if (data && data.length > MAX_DATA_BYTES) {
      throw new BadArgumentsError(`node data of ${data.length} bytes exceeds the ${MAX_DATA_BYTES}-byte limit`, path);
    }
  }

  // ---- operations ---------------------------------------------------------

  /** Creates a node; resolves with its path (sequential modes append the sequence number). Not retried. */
  async create(path: string, data?: Buffer, mode: CreateMode = 'persistent'): Promise<string> {
    this.checkData(data, path);
    return this.link.rel(await this.link.create(this.link.abs(path), data, mode, path));
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
    return createProtected(this, pathPrefix, data, mode, this.options.retry);
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
    await this.link.call<void>(path, (c, cb) => c.remove(this.link.abs(path), version, cb));
  }

  /** The node's stat, or null when it does not exist. A watch fires on create, delete or change. */
  exists(path: string, options: { watch?: Watcher } = {}): Promise<Stat | null> {
    return this.link.watches.watched('exists', path, options.watch, (w) =>
      withRetry(
        () =>
          this.link
            .call<zkStat | null>(path, (c, cb) =>
              w ? c.exists(this.link.abs(path), w, cb) : c.exists(this.link.abs(path), cb),
            )
            .then((s) => (s ? toStat(s) : null)),
        this.options.retry,
      ),
    );
  }

  /** The node's data and stat. A watch fires on change or delete. */
  getData(path: string, options: { watch?: Watcher } = {}): Promise<{ data: Buffer; stat: Stat }> {
    return this.link.watches.watched('data', path, options.watch, (w) =>
      withRetry(
        () =>
          this.link.call<{ data: Buffer; stat: Stat }>(path, (c, cb) => {
            const reply = (err: unknown, data?: Buffer, stat?: zkStat) =>
              err ? cb(err) : cb(null, { data: data ?? Buffer.alloc(0), stat: toStat(stat as zkStat) });
            if (w) c.getData(this.link.abs(path), w, reply);
            else c.getData(this.link.abs(path), reply);
          }),
        this.options.retry,
      ),
    );
  }

  /** Writes data if `version` matches (-1: any); resolves with the new stat. Not retried. */
  async setData(path: string, data: Buffer, version = -1): Promise<Stat> {
    this.checkData(data, path);
    const stat = await this.link.call<zkStat>(path, (c, cb) => c.setData(this.link.abs(path), data, version, cb));
    return toStat(stat);
  }

  /** The names of the node's children (unsorted). A watch fires when children are added or removed. */
  async getChildren(path: string, options: { watch?: Watcher } = {}): Promise<string[]> {
    const names = await this.link.watches.watched('children', path, options.watch, (w) =>
      withRetry(
        () =>
          this.link.call<string[]>(path, (c, cb) =>
            w ? c.getChildren(this.link.abs(path), w, cb) : c.getChildren(this.link.abs(path), cb),
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
    checkMultiSize(ops, this.namespace);
    const wireOps = toWireOps(ops, (path) => this.link.abs(path));
    let results: WriteResult[];
    try {
      results = await this.link.call<WriteResult[]>(ops[0]?.path ?? '/', (c, cb) =>
        sendMulti(c, wireOps, this.link.acl, (err: unknown, res?: WriteResult[]) => {
          if (err && res && typeof err === 'object') Object.assign(err, { results: res });
          cb(err, res);
        }),
      );
    } catch (err) {
      throw multiError(err, ops);
    }
    return toOpResults(results, ops, (path) => this.link.rel(path));
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
    checkReads(reads, this.namespace);
    const wireReads = reads.map((r) => ({ op: r.op, path: this.link.abs(r.path) }));
    assertReadMultiSupported();
    const first = (reads[0] as ReadOp).path;
    const results = await withRetry(
      () => this.link.call<WireReadResult[] | undefined>(first, (c, cb) => sendReadMulti(c, wireReads, cb)),
      this.options.retry,
    );
    if (!results || results.length !== reads.length) throw errorFromCode(ZK_CODES.MARSHALLING_ERROR, first);
    return results.map((r, i) => toReadResult(r, reads[i] as ReadOp, this.stats)) as unknown as ReadResults<R>;
  }

  // ---- helpers built on the operations -------------------------------------

  /**
   * Creates `path` and any missing parents (persistent, empty). Idempotent and retried.
   * With `under` (an ancestor of `path`), creates only the nodes below it: when `under`
   * does not exist, NoNodeError, and nothing is made; BadArgumentsError when it is no ancestor.
   */
  async ensurePath(path: string, options: { under?: string } = {}): Promise<void> {
    await ensurePath(this, path, this.options.retry, options.under);
  }

  /** Deletes `path` and everything under it; a missing node is fine. */
  async deleteRecursive(path: string): Promise<void> {
    await deleteRecursive(this, path);
  }

  /** Runs `fn` under the session's retry policy (for callers' own idempotent sequences). */
  retry<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
    return withRetry(fn, this.options.retry, isRetryable);
  }
}

type zkStat = Parameters<typeof toStat>[0];
