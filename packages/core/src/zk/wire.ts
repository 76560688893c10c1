/**
 * The edge with node-zookeeper-client: conversions between its objects and
 * the session layer's own types, and the runtime extensions of the client,
 * each on its exact release only (WIRE_CLIENT_VERSION; unit tests pin the
 * internals they use): the read-only multi, a write multi serialized here,
 * the request pipe (fewer writes, copies and wrappers per request), and
 * error codes the client does not know (a later server's) made errors of
 * the request they answer instead of exceptions thrown from its socket, and
 * TLS (the client only opens plain TCP sockets).
 * Only this file and session.ts import the client.
 */
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { type ConnectionOptions as NodeTlsOptions, connect as tlsConnect } from 'node:tls';
import zookeeper from 'node-zookeeper-client';
import { permissionBits } from './acl.js';
import { WireClientMismatchError } from './errors.js';
import { DigestMd5Client, type SaslOptions } from './sasl.js';
import type { AclEntry, CreateMode, Stat, WatchEvent } from './types.js';

export type WireClient = zookeeper.Client;
export const wire = zookeeper;

const MODES: Record<CreateMode, number> = {
  persistent: zookeeper.CreateMode.PERSISTENT,
  ephemeral: zookeeper.CreateMode.EPHEMERAL,
  persistent_sequential: zookeeper.CreateMode.PERSISTENT_SEQUENTIAL,
  ephemeral_sequential: zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
};

export function wireMode(mode: CreateMode): number {
  return MODES[mode];
}

export function wireAcl(entries: readonly AclEntry[]): zookeeper.ACL[] {
  return entries.map((e) => new zookeeper.ACL(permissionBits(e.perms), new zookeeper.Id(e.scheme, e.id)));
}

function long(buf: unknown): number {
  return Buffer.isBuffer(buf) && buf.length === 8 ? Number(buf.readBigInt64BE(0)) : Number(buf ?? 0);
}

export function toStat(s: zookeeper.Stat): Stat {
  const owner = s.ephemeralOwner as unknown as Buffer;
  return {
    czxid: long(s.czxid),
    mzxid: long(s.mzxid),
    pzxid: long(s.pzxid),
    ctime: long(s.ctime),
    mtime: long(s.mtime),
    version: s.version,
    cversion: s.cversion,
    aversion: s.aversion,
    ephemeralOwner: Buffer.isBuffer(owner) ? owner.readBigUInt64BE(0).toString(16) : '0',
    dataLength: s.dataLength,
    numChildren: s.numChildren,
  };
}

/**
 * Sets the version of the operation just added to `tx`. The wire client's
 * Transaction stores `version || -1`, so version 0 (a node never written
 * since its creation: the first fencing token) would silently mean "any
 * version" and a stale `check`, `setData` or `delete` in a multi would pass.
 */
export function exactVersion(tx: zookeeper.Transaction, version: number): void {
  const ops = (tx as unknown as { ops: { version?: number }[] }).ops;
  const last = ops[ops.length - 1];
  if (last) last.version = version;
}

const EVENT_TYPES: Record<number, WatchEvent['type']> = {
  [zookeeper.Event.NODE_CREATED]: 'created',
  [zookeeper.Event.NODE_DELETED]: 'deleted',
  [zookeeper.Event.NODE_DATA_CHANGED]: 'dataChanged',
  [zookeeper.Event.NODE_CHILDREN_CHANGED]: 'childrenChanged',
};

export function eventType(e: zookeeper.Event): WatchEvent['type'] {
  return EVENT_TYPES[e.getType()] ?? 'dataChanged';
}

/** The numeric code of an error the wire client reports (Exception or anything else). */
export function wireErrorCode(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'getCode' in err && typeof err.getCode === 'function') {
    return (err as zookeeper.Exception).getCode();
  }
  return undefined;
}

/**
 * Closes the client's current socket so that it reconnects (used when the
 * connection has gone silent). The wire client offers no public call for it.
 */
export function dropConnection(client: WireClient): void {
  const manager = (client as unknown as { connectionManager?: { socket?: { destroy(): void } } }).connectionManager;
  manager?.socket?.destroy();
}

/**
 * Makes every connection of `client` start reading at a reply boundary. The
 * wire client keeps the bytes of a reply that was torn when its socket died
 * and glues the next connection's first bytes to them: the handshake reply
 * is then misread (a garbage session id and timeout, or a wait for bytes
 * that never come) and the session is lost, or worse, it seems connected
 * while nothing it reads makes sense. Dropped on every disconnection.
 */
export function discardTornReplies(client: WireClient): void {
  const manager = (client as unknown as { connectionManager?: TornReplyHolder }).connectionManager;
  if (!manager) return;
  const disconnected = (manager.constructor as { STATES?: { DISCONNECTED?: number } }).STATES?.DISCONNECTED;
  manager.on('state', (state) => {
    if (state === disconnected) manager.pendingBuffer = null;
  });
}

interface TornReplyHolder {
  pendingBuffer: Buffer | null;
  on(event: 'state', listener: (state: number) => void): void;
}

// ---- error codes the wire client does not know -------------------------------------
//
// The client's Exception.create throws on any code missing from its table
// (1.1.3 knows none after -115), and it is called inside the socket's data
// handler: a reply carrying such a code (SessionClosedRequireAuth -124 from a
// server enforcing SASL, QuotaExceeded -125, Throttled -127, or a code of a
// later release) would end the process with an exception nobody can catch.
// `acceptUnknownErrorCodes` replaces the module's `create` (which the connection
// manager and Transaction look up at each call) by one that returns an
// Exception carrying any code; known codes keep the client's own objects.

/** Names of codes ZooKeeper 3.5-3.9 may answer that the wire client's table lacks. */
const LATER_CODES: Record<number, string> = {
  [-12]: 'UNKNOWN_SESSION',
  [-13]: 'NEW_CONFIG_NO_QUORUM',
  [-14]: 'RECONFIG_IN_PROGRESS',
  [-118]: 'SESSION_MOVED',
  [-119]: 'NOT_READONLY',
  [-120]: 'EPHEMERAL_ON_LOCAL_SESSION',
  [-121]: 'NO_WATCHER',
  [-122]: 'REQUEST_TIMEOUT',
  [-123]: 'RECONFIG_DISABLED',
  [-124]: 'SESSION_CLOSED_REQUIRE_SASL_AUTH',
  [-125]: 'QUOTA_EXCEEDED',
  [-127]: 'THROTTLED_OP',
};
const ACCEPTS_ANY_CODE = Symbol.for('zkq.wire.anyCode');

interface ExceptionModule {
  (code: number, name: string, path: string | undefined, ctor: unknown): void;
  create: ((code: number, path?: string) => unknown) & { [ACCEPTS_ANY_CODE]?: true };
  prototype: object;
  [name: string]: unknown;
}

function loadExceptionModule(): ExceptionModule {
  return createRequire(import.meta.url)('node-zookeeper-client/lib/Exception.js') as ExceptionModule;
}

/** What differs, in the given Exception module, from what `acceptUnknownErrorCodes` relies on (empty: all fine). */
export function unknownCodeProblems(
  exception: ExceptionModule = loadExceptionModule(),
  manager: { prototype?: Methods } = createRequire(import.meta.url)('node-zookeeper-client/lib/ConnectionManager.js'),
): string[] {
  const problems: string[] = [];
  if (exception !== (zookeeper.Exception as unknown)) problems.push('the client exports another Exception module');
  if (typeof exception.create !== 'function' || !String(exception.create).includes('validateCode(code)')) {
    problems.push('Exception.create no longer does `validateCode(code)`');
  }
  if (exception.AUTH_FAILED !== -115 || exception.OK !== 0) problems.push('Exception.AUTH_FAILED or OK changed');
  const onData = manager.prototype?.onSocketData;
  if (typeof onData !== 'function' || !String(onData).includes('Exception.create(responseHeader.err)')) {
    problems.push('ConnectionManager.prototype.onSocketData no longer does `Exception.create(responseHeader.err)`');
  }
  return problems;
}

/**
 * Makes the wire client's Exception.create accept any code (see above).
 * Returns what differs from the checked client instead, leaving it as it is.
 */
export function acceptUnknownErrorCodes(): string[] {
  let exception: ExceptionModule;
  try {
    exception = loadExceptionModule();
  } catch (err) {
    return [`its internals do not load (${String(err)})`];
  }
  if (exception.create[ACCEPTS_ANY_CODE]) return [];
  const problems = unknownCodeProblems(exception);
  if (problems.length > 0) return problems;
  const original = exception.create;
  const known = new Set(Object.values(exception).filter((v): v is number => typeof v === 'number'));
  const create = (code: number, path?: string): unknown => {
    if (typeof code !== 'number' || known.has(code)) return original(code, path);
    // an Exception as the client builds one (getCode, getName, getPath, instanceof), for a code it lacks
    const error = Object.create(exception.prototype) as Error & { code: number; path?: string };
    const name = LATER_CODES[code] ?? `UNKNOWN_CODE_${-code}`;
    Object.assign(error, { code, name, path, message: `Exception: ${name}[${code}]${path ? `@${path}` : ''}` });
    Error.captureStackTrace(error, create);
    return error;
  };
  (create as typeof exception.create)[ACCEPTS_ANY_CODE] = true;
  exception.create = create as typeof exception.create;
  return [];
}

/** Reply xids the server answers outside any request: pings and auth packets. */
const XID = { PING: -2, AUTH: -4 } as const;
/** The server closes the connection after answering this code, whatever the request. */
const REQUIRE_AUTH_CODE = -124;
const REFUSED = Symbol.for('zkq.wire.refused');

/**
 * Calls `listener` with the code when the server answers `client`'s
 * connection itself with an error: a ping or auth packet answered with any
 * code but success, or any reply saying SessionClosedRequireAuth (-124; the
 * server closes the connection after it). Such an answer would otherwise be
 * dropped or seen by one request only. Needs the request pipe (`tuneClient`),
 * which reads every reply first.
 */
export function onConnectionRefused(client: WireClient, listener: (code: number) => void): void {
  const manager = (client as unknown as { connectionManager?: Record<symbol, unknown> }).connectionManager;
  if (manager) manager[REFUSED] = listener;
}

/** The code of a reply that refuses the connection itself (see onConnectionRefused), or undefined. */
export function refusalCode(packet: Buffer): number | undefined {
  if (packet.length < 20) return undefined;
  const xid = packet.readInt32BE(4);
  const err = packet.readInt32BE(16);
  if (err === REQUIRE_AUTH_CODE || ((xid === XID.PING || xid === XID.AUTH) && err !== 0)) return err;
  return undefined;
}

// ---- TLS ----------------------------------------------------------------------------
//
// The connection manager opens each connection with `net.connect(server)` in
// its `connect`. `useTls` gives one client's manager a `connect` of its own
// doing the same with `tls.connect`: the same server rotation
// (findNextServer), connect timeout and socket handlers, the handshake
// (ConnectRequest) sent once TLS is up ('secureConnect'), so a handshake that
// hangs runs into the connect timeout. Kept for every reconnection, to
// whichever server comes next. A TLS error that retrying cannot cure (an
// untrusted, expired or misnamed certificate; the server refusing ours) is
// reported to the `onSecurityFailure` listener instead of being retried.

const SECURITY = Symbol.for('zkq.wire.security');
const TLS_STATEMENTS = [
  'self.setState(STATES.CONNECTING);',
  'self.findNextServer(function (server) {',
  'self.socket = net.connect(server);',
  'self.connectTimeoutHandler = setTimeout(',
  'self.onSocketConnectTimeout.bind(self),',
  'self.connectTimeout',
  'self.socket.setNoDelay();',
  "self.socket.on('connect', self.onSocketConnected.bind(self));",
  "self.socket.on('data', self.onSocketData.bind(self));",
  "self.socket.on('drain', self.onSocketDrain.bind(self));",
  "self.socket.on('close', self.onSocketClosed.bind(self));",
  "self.socket.on('error', self.onSocketError.bind(self));",
];

/** What differs, in the given connection manager, from what `useTls` re-implements (empty: all fine). */
export function tlsProblems(
  manager: { prototype?: Methods } = createRequire(import.meta.url)('node-zookeeper-client/lib/ConnectionManager.js'),
): string[] {
  const connect = manager.prototype?.connect;
  const source = typeof connect === 'function' ? String(connect) : '';
  const problems = TLS_STATEMENTS.filter((statement) => !source.includes(statement)).map(
    (statement) => `ConnectionManager.prototype.connect no longer does \`${statement}\``,
  );
  for (const method of ['findNextServer', 'onSocketConnected', 'onSocketConnectTimeout', 'setState']) {
    if (typeof manager.prototype?.[method] !== 'function')
      problems.push(`ConnectionManager.prototype.${method} is missing`);
  }
  return problems;
}

/** TLS error codes after which connecting again cannot succeed. */
const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** True for a TLS failure that retrying cannot cure: a certificate refused by either side, or no common protocol. */
export function isSecurityFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  return TLS_VERIFY_CODES.has(code) || code.startsWith('ERR_SSL_');
}

interface TlsManager {
  state: number;
  connect(): void;
  socket?: unknown;
  connectTimeout: number;
  connectTimeoutHandler: NodeJS.Timeout | null;
  setState(state: number): void;
  findNextServer(callback: (server: { host: string; port: number }) => void): void;
  onSocketConnected(): void;
  onSocketConnectTimeout(): void;
  onSocketData(buffer: Buffer): void;
  onSocketDrain(): void;
  onSocketClosed(hadError: boolean): void;
  onSocketError(err: Error): void;
}

/**
 * Makes every connection of `client` (not yet connected) TLS with `options`
 * (Node's tls.connect options; `servername` defaults to each server's host
 * unless it is an IP address). Returns what differs from the checked wire
 * client instead, leaving the client as it is: the caller must then refuse
 * to connect, as the connection would not be secure.
 */
export function useTls(client: WireClient, options: NodeTlsOptions): string[] {
  const problems = tlsProblems();
  if (problems.length > 0) return problems;
  const m = (client as unknown as { connectionManager?: TlsManager }).connectionManager;
  if (!m) return ['the client has no connection manager'];
  const connecting = (m.constructor as { STATES?: { CONNECTING?: number } }).STATES?.CONNECTING ?? STATE.CONNECTING;
  m.connect = function connect(this: TlsManager): void {
    this.setState(connecting);
    this.findNextServer((server) => {
      const servername = options.servername ?? (isIP(server.host) ? undefined : server.host);
      const socket = tlsConnect({
        ...options,
        host: server.host,
        port: server.port,
        ...(servername ? { servername } : {}),
      });
      this.socket = socket;
      this.connectTimeoutHandler = setTimeout(this.onSocketConnectTimeout.bind(this), this.connectTimeout);
      socket.setNoDelay();
      socket.on('secureConnect', this.onSocketConnected.bind(this));
      socket.on('data', this.onSocketData.bind(this));
      socket.on('drain', this.onSocketDrain.bind(this));
      socket.on('close', this.onSocketClosed.bind(this));
      socket.on('error', (err: Error) => {
        if (this.socket === socket && isSecurityFailure(err)) {
          (this as unknown as Record<symbol, ((err: Error) => void) | undefined>)[SECURITY]?.(err);
        }
        this.onSocketError(err);
      });
    });
  };
  return [];
}

/** Calls `listener` with the error when a TLS connection of `client` fails for good (see useTls). */
export function onSecurityFailure(client: WireClient, listener: (err: Error) => void): void {
  const manager = (client as unknown as { connectionManager?: Record<symbol, unknown> }).connectionManager;
  if (manager) manager[SECURITY] = listener;
}

// ---- SASL -------------------------------------------------------------------------
//
// ZooKeeper's SASL requests (op 102, a token each way) are not in the wire
// client. `useSasl` runs the exchange on each new connection of a client
// carrying the request pipe, before anything else is sent: when the manager
// reports the connection up, the pipe holds every queued request (the
// session's, its auth and set-watches packets, pings) while the tokens go
// out and their replies, recognized by xid, are read here without reaching
// the manager (it does not know op 102). Once the server has proved it knows
// the password, the held requests go, in order. A refusal (an error in a
// reply, a proof that does not match) is reported to the onConnectionRefused
// listener: AuthFailed (-115), or SessionClosedRequireAuth (-124) from a
// server enforcing SASL.

const SASL = Symbol.for('zkq.wire.sasl');
const SASL_OP = 102;
const AUTH_FAILED_CODE = -115;

interface SaslExchange {
  options: SaslOptions;
  client: DigestMd5Client | undefined;
  /** The xid of the SASL request awaiting its reply. */
  xid: number | undefined;
  /** Requests are held until the exchange completes on the current connection. */
  gated: boolean;
}

function refuse(m: ManagerLike, code: number): void {
  (m as unknown as Record<symbol, ((code: number) => void) | undefined>)[REFUSED]?.(code);
}

/**
 * Authenticates every connection of `client` (tuned by `tuneClient`, not yet
 * connected) with SASL DIGEST-MD5 before any other request. Returns what
 * prevents it instead (no request pipe), leaving the client as it is: the
 * caller must then not connect, as a server enforcing SASL would refuse it.
 */
export function useSasl(client: WireClient, options: SaslOptions): string[] {
  const m = (client as unknown as { connectionManager?: ManagerLike }).connectionManager;
  if (!m || !(m as unknown as Record<symbol, unknown>)[TUNED]) return ['the request pipe is not installed'];
  const exchange: SaslExchange = { options, client: undefined, xid: undefined, gated: true };
  (m as unknown as Record<symbol, SaslExchange>)[SASL] = exchange;
  (m as unknown as NodeJS.EventEmitter).on('state', (state: number) => {
    if (state === STATE.CONNECTED || state === STATE.CONNECTED_READ_ONLY) {
      exchange.gated = true;
      exchange.client = new DigestMd5Client(options);
      sendSaslToken(m, exchange, exchange.client.next(Buffer.alloc(0)));
    } else if (state !== STATE.CLOSING) {
      exchange.gated = true;
      exchange.xid = undefined;
    }
  });
  return [];
}

function sendSaslToken(m: ManagerLike, exchange: SaslExchange, token: Buffer): void {
  const xid = m.xid;
  m.xid += 1;
  exchange.xid = xid;
  const packet = Buffer.allocUnsafe(16 + token.length);
  packet.writeInt32BE(12 + token.length, 0);
  packet.writeInt32BE(xid, 4);
  packet.writeInt32BE(SASL_OP, 8);
  packet.writeInt32BE(token.length, 12);
  token.copy(packet, 16);
  (m.socket as SocketLike).write(packet);
}

/** A reply of the SASL exchange: header (xid, zxid, err), then SetSASLResponse (a buffer). */
function onSaslReply(m: ManagerLike, exchange: SaslExchange, packet: Buffer, refused: boolean): void {
  exchange.xid = undefined;
  const err = packet.readInt32BE(16);
  if (err !== 0) {
    if (!refused) refuse(m, err);
    return;
  }
  const length = packet.length >= 24 ? packet.readInt32BE(20) : -1;
  const challenge = length > 0 ? packet.subarray(24, 24 + length) : Buffer.alloc(0);
  let token: Buffer;
  try {
    token = (exchange.client as DigestMd5Client).next(challenge);
  } catch {
    refuse(m, AUTH_FAILED_CODE); // a challenge this client cannot answer, or a server without the password
    return;
  }
  if (!exchange.client?.done) {
    sendSaslToken(m, exchange, token);
    return;
  }
  exchange.gated = false;
  process.nextTick(() => m.onPacketQueueReadable());
}

// ---- multis ---------------------------------------------------------------------
//
// ZooKeeper 3.6+ answers a read-only multi (op 22): getData / getChildren ops
// in one request and one reply, each op failing alone. The wire client does
// not implement it, so it is added here, at runtime, on the exact release it
// was written against (a check refuses any other, and a unit test pins the
// internals used):
//
// - the request goes through the client's own connection manager queue, so it
//   is ordered with every other request of the session and shares the xid and
//   reply bookkeeping. It is a request object of our own: its header carries
//   op MULTI where the manager looks to pick a reply parser, and its bytes
//   carry op 22;
// - the manager then parses the reply with the client's multi reply parser
//   (`jute.TransactionResponse`), a MultiResponse either way. That parser is
//   taught the two read result types, as ZooKeeper's MultiResponse has them;
//   any reply holding a write result is left to the client's own code.
//
// The write multi (`sendMulti`) goes the same way, a request object of our
// own serialized in one pass (the client's Transaction spends ~4 µs per op in
// its generic record serializer), its reply parsed by the client.

/** The exact release of node-zookeeper-client the extensions were written against. */
export const WIRE_CLIENT_VERSION = '1.1.3';

const OP = { GET_DATA: 4, GET_CHILDREN: 8, MULTI: 14, MULTI_READ: 22, ERROR: -1 } as const;
/** Bytes of a MultiHeader: type (int), done (boolean), err (int). */
const MULTI_HEADER_BYTES = 9;
const STAT_BYTES = 68;
const PATCHED = Symbol.for('zkq.wire.readMulti');

/** One op of a read-only multi, its path absolute on the server. */
export interface WireRead {
  op: 'getData' | 'getChildren';
  path: string;
}

/** One result of a read-only multi, in the order of the ops. */
export type WireReadResult =
  | { type: typeof OP.GET_DATA; data: Buffer; stat: Stat }
  | { type: typeof OP.GET_CHILDREN; children: string[] }
  | { type: typeof OP.ERROR; err: number };

type Deserialize = (this: { results: unknown; chrootPath?: string }, buffer: Buffer, offset: number) => number;
interface WireInternals {
  version: unknown;
  jute: { OP_CODES?: Record<string, unknown>; TransactionResponse?: { prototype?: Record<PropertyKey, unknown> } };
  /** The jute record layouts (lib/jute/specification.json). */
  specification?: { protocol?: Record<string, unknown>; data?: Record<string, unknown> };
  ConnectionManager: { prototype?: Record<string, unknown> } & (abstract new (...args: never[]) => unknown);
}
interface WireManager {
  queue(request: object, callback: (err: unknown, response?: { payload?: { results?: unknown } }) => void): void;
}

function loadInternals(): WireInternals {
  const req = createRequire(import.meta.url);
  return {
    version: (req('node-zookeeper-client/package.json') as { version?: unknown }).version,
    jute: req('node-zookeeper-client/lib/jute/index.js'),
    specification: req('node-zookeeper-client/lib/jute/specification.json'),
    ConnectionManager: req('node-zookeeper-client/lib/ConnectionManager.js'),
  };
}

/** The layouts of the records a write multi is made of, as WriteMultiRequest writes them. */
const WRITE_MULTI_LAYOUTS: Record<string, string> = {
  'protocol.MultiHeader': 'type:int,done:boolean,err:int',
  'protocol.CreateRequest': 'path:ustring,data:buffer,acl:vector<data.ACL>,flags:int',
  'protocol.DeleteRequest': 'path:ustring,version:int',
  'protocol.SetDataRequest': 'path:ustring,data:buffer,version:int',
  'protocol.CheckVersionRequest': 'path:ustring,version:int',
};

function layoutOf(spec: WireInternals['specification'], name: string): string {
  const [module, record] = name.split('.') as [string, string];
  const fields = (spec as Record<string, Record<string, unknown> | undefined> | undefined)?.[module]?.[record];
  if (!Array.isArray(fields)) return 'missing';
  return fields.map((f: { name?: unknown; type?: unknown }) => `${String(f.name)}:${String(f.type)}`).join(',');
}

/** What differs, in the given wire client internals, from what the extension relies on (empty: all fine). */
export function wireClientProblems(internals: WireInternals = loadInternals()): string[] {
  const problems: string[] = [];
  const { version, jute, ConnectionManager } = internals;
  if (version !== WIRE_CLIENT_VERSION) problems.push(`installed version is ${String(version)}`);
  const codes = jute.OP_CODES ?? {};
  for (const [name, code] of [
    ['GET_DATA', 4],
    ['GET_CHILDREN', 8],
    ['MULTI', 14],
    ['ERROR', -1],
    ['CREATE', 1],
    ['DELETE', 2],
    ['SET_DATA', 5],
    ['CHECK', 13],
  ] as const) {
    if (codes[name] !== code) problems.push(`jute.OP_CODES.${name} is not ${code}`);
  }
  for (const [name, layout] of Object.entries(WRITE_MULTI_LAYOUTS)) {
    if (layoutOf(internals.specification, name) !== layout) problems.push(`the ${name} record is no longer ${layout}`);
  }
  if (typeof jute.TransactionResponse?.prototype?.deserialize !== 'function') {
    problems.push('jute.TransactionResponse.prototype.deserialize is missing');
  }
  const proto = ConnectionManager?.prototype ?? {};
  // The manager's behaviour the request relies on, by the statements that implement it.
  const expected: [string, string][] = [
    ['queue', 'request.payload.setChrootPath'],
    ['onPacketQueueReadable', 'header.xid = this.xid'],
    ['onPacketQueueReadable', 'packet.request.toBuffer()'],
    ['onSocketData', 'pendingPacket.request.header.xid !== responseHeader.xid'],
    ['onSocketData', 'switch (pendingPacket.request.header.type)'],
    ['onSocketData', 'responsePayload = new jute.TransactionResponse()'],
    ['onSocketData', 'offset += responsePayload.deserialize(buffer, offset)'],
  ];
  for (const [method, statement] of expected) {
    const fn = proto[method];
    if (typeof fn !== 'function' || !fn.toString().includes(statement)) {
      problems.push(`ConnectionManager.prototype.${method} no longer does \`${statement}\``);
    }
  }
  return problems;
}

let installed: { ConnectionManager: WireInternals['ConnectionManager'] } | WireClientMismatchError | undefined;

/** Checks the wire client once and installs the reply parser; throws WireClientMismatchError when it differs. */
export function assertReadMultiSupported(): void {
  if (!installed) {
    let internals: WireInternals;
    try {
      internals = loadInternals();
    } catch (err) {
      installed = new WireClientMismatchError(WIRE_CLIENT_VERSION, [`its internals do not load (${String(err)})`]);
      throw installed;
    }
    const problems = wireClientProblems(internals);
    if (problems.length > 0) installed = new WireClientMismatchError(WIRE_CLIENT_VERSION, problems);
    else {
      teachReadResults(internals.jute.TransactionResponse?.prototype as Record<PropertyKey, unknown>);
      installed = { ConnectionManager: internals.ConnectionManager };
    }
  }
  if (installed instanceof WireClientMismatchError) throw installed;
}

/** Set while a tuned manager handles the reply its oldest pending request, a write multi of ours, awaits. */
let parsingOwnMulti = false;

function teachReadResults(proto: Record<PropertyKey, unknown>): void {
  if (proto[PATCHED]) return;
  const original = proto.deserialize as Deserialize;
  const deserialize: Deserialize = function (buffer, offset) {
    // a write multi's reply is parsed here only for this extension's own multis (`parsingOwnMulti`):
    // every other client of the library keeps its parser and its Stat records
    const parsed = parsingOwnMulti ? parseWriteReply(buffer, offset, this.chrootPath) : parseReadReply(buffer, offset);
    if (!parsed) return original.call(this, buffer, offset);
    this.results = parsed.results;
    return parsed.bytes;
  };
  proto.deserialize = deserialize;
  proto[PATCHED] = true;
}

/**
 * Parses a MultiResponse made only of read and error results; undefined when
 * it holds anything else (a write multi's reply) or no read result at all.
 */
export function parseReadReply(
  buffer: Buffer,
  offset: number,
): { results: WireReadResult[]; bytes: number } | undefined {
  const results: WireReadResult[] = [];
  let at = offset;
  let reads = 0;
  for (;;) {
    const type = buffer.readInt32BE(at);
    const done = buffer.readUInt8(at + 4) === 1;
    at += MULTI_HEADER_BYTES;
    if (done) break;
    if (type === OP.GET_DATA) {
      const length = buffer.readInt32BE(at);
      at += 4;
      const data = length > 0 ? Buffer.from(buffer.subarray(at, at + length)) : Buffer.alloc(0);
      at += Math.max(0, length);
      results.push({ type, data, stat: readStat(buffer, at) });
      at += STAT_BYTES;
      reads++;
    } else if (type === OP.GET_CHILDREN) {
      const count = buffer.readInt32BE(at);
      at += 4;
      const children: string[] = [];
      for (let i = 0; i < count; i++) {
        const length = buffer.readInt32BE(at);
        children.push(buffer.toString('utf8', at + 4, at + 4 + length));
        at += 4 + length;
      }
      results.push({ type, children });
      reads++;
    } else if (type === OP.ERROR) {
      results.push({ type, err: buffer.readInt32BE(at) });
      at += 4;
    } else return undefined;
  }
  return reads > 0 ? { results, bytes: at - offset } : undefined;
}

/**
 * Parses a write multi's MultiResponse in place (the wire client builds a
 * record object per field): `{ type, path }` for a create (the client's
 * chroot taken off, as it does), `{ type, stat }` for a setData (a Stat as
 * `toStat` makes it), `{ type }` for a delete or check, `{ type, err }` for
 * an error. Undefined when it holds anything else.
 */
export function parseWriteReply(
  buffer: Buffer,
  offset: number,
  chroot?: string,
): { results: WriteResult[]; bytes: number } | undefined {
  const results: WriteResult[] = [];
  let at = offset;
  for (;;) {
    const type = buffer.readInt32BE(at);
    const done = buffer.readUInt8(at + 4) === 1;
    at += MULTI_HEADER_BYTES;
    if (done) break;
    if (type === WRITE_OP.create) {
      const length = buffer.readInt32BE(at);
      let path = length > 0 ? buffer.toString('utf8', at + 4, at + 4 + length) : '';
      at += 4 + Math.max(0, length);
      if (chroot && path.startsWith(chroot)) path = path.slice(chroot.length) || '/';
      results.push({ type, path });
    } else if (type === WRITE_OP.setData) {
      results.push({ type, stat: readStat(buffer, at) });
      at += STAT_BYTES;
    } else if (type === WRITE_OP.delete || type === WRITE_OP.check) {
      results.push({ type });
    } else if (type === OP.ERROR) {
      results.push({ type, err: buffer.readInt32BE(at) });
      at += 4;
    } else return undefined;
  }
  return { results, bytes: at - offset };
}

/** A Stat record, converted as `toStat` converts the wire client's. */
function readStat(b: Buffer, at: number): Stat {
  const long = (o: number) => Number(b.readBigInt64BE(at + o));
  return {
    czxid: long(0),
    mzxid: long(8),
    ctime: long(16),
    mtime: long(24),
    version: b.readInt32BE(at + 32),
    cversion: b.readInt32BE(at + 36),
    aversion: b.readInt32BE(at + 40),
    ephemeralOwner: b.readBigUInt64BE(at + 44).toString(16),
    dataLength: b.readInt32BE(at + 52),
    numChildren: b.readInt32BE(at + 56),
    pzxid: long(60),
  };
}

/**
 * A multi as the connection manager handles requests: it sets `header.xid`,
 * reads `header.type` (MULTI) to pick the reply parser, hands the payload a
 * chroot, and sends `toBuffer()`.
 */
abstract class MultiRequest {
  readonly header = { xid: 0, type: OP.MULTI };
  private chroot = '';
  readonly payload = {
    setChrootPath: (path: string | undefined) => {
      this.chroot = path ?? '';
    },
  };

  protected full(path: string): string {
    if (!this.chroot) return path;
    return path === '/' ? this.chroot : this.chroot + path;
  }

  /** The request: length, xid, `type`, the ops' bytes (`size` of them, written by `write`), the end header. */
  protected frame(type: number, size: number, write: (buffer: Buffer, at: number) => number): Buffer {
    const buffer = Buffer.allocUnsafe(4 + 8 + size + MULTI_HEADER_BYTES);
    let at = buffer.writeInt32BE(8 + size + MULTI_HEADER_BYTES, 0);
    at = buffer.writeInt32BE(this.header.xid, at);
    at = buffer.writeInt32BE(type, at);
    at = write(buffer, at);
    at = buffer.writeInt32BE(-1, at);
    at = buffer.writeUInt8(1, at);
    // Sizes and bytes written disagreeing would send garbage: refuse instead.
    if (buffer.writeInt32BE(-1, at) !== buffer.length) throw new Error('multi request: size and bytes disagree');
    return buffer;
  }

  abstract toBuffer(): Buffer;
}

/** A read-only multi: the manager parses its reply as a multi's; its bytes say op 22. */
class ReadMultiRequest extends MultiRequest {
  constructor(private readonly reads: readonly WireRead[]) {
    super();
  }

  toBuffer(): Buffer {
    const paths = this.reads.map((r) => Buffer.from(this.full(r.path)));
    let size = 0;
    for (const p of paths) size += MULTI_HEADER_BYTES + 4 + p.length + 1;
    return this.frame(OP.MULTI_READ, size, (buffer, start) => {
      let at = start;
      this.reads.forEach((r, i) => {
        const path = paths[i] as Buffer;
        at = buffer.writeInt32BE(r.op === 'getData' ? OP.GET_DATA : OP.GET_CHILDREN, at);
        at = buffer.writeUInt8(0, at);
        at = buffer.writeInt32BE(-1, at);
        at = buffer.writeInt32BE(path.length, at);
        at += path.copy(buffer, at);
        at = buffer.writeUInt8(0, at); // no watch
      });
      return at;
    });
  }
}

/** One op of a write multi, its path absolute on the server; versions are exact (-1: any). */
export type WireOp =
  | { op: 'create'; path: string; data?: Buffer; mode: number }
  | { op: 'delete'; path: string; version: number }
  | { op: 'setData'; path: string; data: Buffer; version: number }
  | { op: 'check'; path: string; version: number };

const WRITE_OP = { create: 1, delete: 2, setData: 5, check: 13 } as const;
const aclBytesCache = new WeakMap<readonly zookeeper.ACL[], Buffer>();

type AclRecord = { byteLength(): number; serialize(buffer: Buffer, offset: number): number };

/** An ACL vector's bytes, by the client's own serializer, once per ACL array (a session has one). */
function aclBytes(acl: readonly zookeeper.ACL[]): Buffer {
  let bytes = aclBytesCache.get(acl);
  if (!bytes) {
    const parts = [Buffer.alloc(4)];
    (parts[0] as Buffer).writeInt32BE(acl.length);
    for (const a of acl) {
      const record = (a as unknown as { toRecord(): AclRecord }).toRecord();
      const b = Buffer.alloc(record.byteLength());
      record.serialize(b, 0);
      parts.push(b);
    }
    bytes = Buffer.concat(parts);
    aclBytesCache.set(acl, bytes);
  }
  return bytes;
}

/**
 * A write multi serialized straight into one buffer, byte for byte what the
 * wire client's Transaction sends (a unit test compares them) at a fraction
 * of its CPU: the client's generic record serializer measures every record
 * twice and matches each field's type by regular expression. Versions are
 * written as given (the client's Transaction turns version 0 into -1).
 */
class WriteMultiRequest extends MultiRequest {
  constructor(
    private readonly ops: readonly WireOp[],
    private readonly acl: Buffer,
  ) {
    super();
  }

  toBuffer(): Buffer {
    const paths = this.ops.map((o) => this.full(o.path));
    let size = 0;
    this.ops.forEach((o, i) => {
      size += MULTI_HEADER_BYTES + 4 + Buffer.byteLength(paths[i] as string) + 4;
      if (o.op === 'create') size += 4 + (o.data?.length ?? 0) + this.acl.length;
      else if (o.op === 'setData') size += 4 + o.data.length;
    });
    return this.frame(OP.MULTI, size, (buffer, start) => {
      let at = start;
      this.ops.forEach((o, i) => {
        const path = paths[i] as string;
        at = buffer.writeInt32BE(WRITE_OP[o.op], at);
        at = buffer.writeUInt8(0, at);
        at = buffer.writeInt32BE(-1, at);
        const length = buffer.write(path, at + 4, 'utf8');
        at = buffer.writeInt32BE(length, at) + length;
        if (o.op === 'create') {
          at = writeData(buffer, at, o.data);
          at += this.acl.copy(buffer, at);
          at = buffer.writeInt32BE(o.mode, at);
        } else if (o.op === 'setData') {
          at = writeData(buffer, at, o.data);
          at = buffer.writeInt32BE(o.version, at);
        } else at = buffer.writeInt32BE(o.version, at);
      });
      return at;
    });
  }
}

function writeData(buffer: Buffer, at: number, data: Buffer | undefined): number {
  if (!data) return buffer.writeInt32BE(-1, at);
  const next = buffer.writeInt32BE(data.length, at);
  return next + data.copy(buffer, next);
}

/** The checked manager of `client`, or the reason the multi extension cannot use it. */
function checkedManager(client: WireClient): WireManager | WireClientMismatchError {
  try {
    assertReadMultiSupported();
  } catch (err) {
    return err as WireClientMismatchError;
  }
  const manager = (client as unknown as { connectionManager?: unknown }).connectionManager;
  const { ConnectionManager } = installed as { ConnectionManager: WireInternals['ConnectionManager'] };
  if (manager instanceof ConnectionManager) return manager as unknown as WireManager;
  return new WireClientMismatchError(WIRE_CLIENT_VERSION, ['the client does not use the checked ConnectionManager']);
}

/**
 * Sends a read-only multi on `client`'s connection; `callback` gets one
 * result per read, in order, or the wire client's error for the whole
 * request (connection loss, session expired, ...). Throws
 * WireClientMismatchError when the extension cannot run (passes it to
 * `callback` when only this client's manager is not the checked one).
 */
export function sendReadMulti(
  client: WireClient,
  reads: readonly WireRead[],
  callback: (err: unknown, results?: WireReadResult[]) => void,
): void {
  assertReadMultiSupported();
  const manager = checkedManager(client);
  if (manager instanceof WireClientMismatchError) {
    callback(manager);
    return;
  }
  manager.queue(new ReadMultiRequest(reads), (err, response) => {
    if (err) callback(err);
    else callback(null, response?.payload?.results as WireReadResult[] | undefined);
  });
}

/** One result of a write multi; its stat converted (`toStat`). */
export type WriteResult = { type: number; path?: string; stat?: Stat; err?: number };

/**
 * Sends a write multi on `client`'s connection, new nodes with `acl`;
 * `callback` gets the results, or the failing op's error with the results
 * (as the wire client's Transaction.commit reports it). On a wire client the
 * extension does not know, the client's own Transaction sends it.
 */
export function sendMulti(
  client: WireClient,
  ops: readonly WireOp[],
  acl: readonly zookeeper.ACL[],
  callback: (err: unknown, results?: WriteResult[]) => void,
): void {
  const manager = checkedManager(client);
  if (manager instanceof WireClientMismatchError) {
    // the client's own parse: its stats converted here
    transactionOf(client, ops, acl).commit((err, results) => {
      const written = results as WriteResult[] | undefined;
      for (const r of written ?? []) convertStat(r);
      callback(err, written);
    });
    return;
  }
  manager.queue(new WriteMultiRequest(ops, aclBytes(acl)), (err, response) => {
    if (err) return callback(err);
    // a manager without the request pipe (tuneClient refused it) does not mark the reply as ours:
    // the client parsed it, and its stats are its Stat records
    const results = (response?.payload?.results ?? []) as WriteResult[];
    for (const r of results) convertStat(r);
    const failed = results.find((r) => r.type === OP.ERROR && r.err !== 0);
    callback(failed ? wireException(failed.err as number) : null, results);
  });
}

/** A stat the client parsed (its Stat record, fields as Buffers) made a Stat as `toStat` makes it. */
function convertStat(r: WriteResult): void {
  const stat = r.stat as Stat | zookeeper.Stat | undefined;
  if (stat && Buffer.isBuffer(stat.czxid)) r.stat = toStat(stat as zookeeper.Stat);
}

const wireException = (code: number): unknown =>
  (zookeeper.Exception as unknown as { create(code: number): unknown }).create(code);

/** The same multi as the wire client's own Transaction. */
function transactionOf(client: WireClient, ops: readonly WireOp[], acl: readonly zookeeper.ACL[]) {
  const tx = client.transaction();
  const mutableAcl = acl as zookeeper.ACL[];
  for (const o of ops) {
    if (o.op === 'create') {
      if (o.data) tx.create(o.path, o.data, mutableAcl, o.mode);
      else tx.create(o.path, mutableAcl, o.mode);
    } else if (o.op === 'delete') exactVersion(tx.remove(o.path, o.version), o.version);
    else if (o.op === 'setData') exactVersion(tx.setData(o.path, o.data, o.version), o.version);
    else exactVersion(tx.check(o.path, o.version), o.version);
  }
  return tx;
}

// ---- the request pipe -----------------------------------------------------------
//
// Per request, the wire client writes the request with a socket.write of its
// own the moment it is queued, copies all unparsed input again (Buffer.concat)
// for every reply it parses, and runs each single request through an
// async.whilst retry wrapper. `tuneClient` changes that on one client of the
// checked release, before it connects (every other client is left alone):
//
// - writes: a request is serialized when queued (so a bad argument still
//   throws to its caller), and the requests queued in one tick go out in the
//   next one (process.nextTick) as one socket write, in queue order, each
//   given its xid as the manager gives it (patched into bytes 4-7, where the
//   request header's xid is). The manager's own direct sends (after the connect
//   reply: auth, set-watches, then the queue; on 'drain') still go at once;
//   auth and set-watches packets a reconnection queues go before the requests
//   that waited for it;
// - reads: the input is cut into packets by offset and each packet handed,
//   whole and uncopied, to the manager's own handler (which then neither
//   buffers nor recurses); only a packet split across chunks is joined, once,
//   when complete. Bytes left by a closed socket are dropped, not put in front
//   of the next connection's. A packet that does not parse drops the
//   connection instead of throwing from the data handler (handleWhole);
// - create, remove, setData, getData, exists and getChildren queue their
//   request directly: with `retries: 0` (all the session uses) the wrapper
//   sends once and passes the reply on, and the session has its own timeouts
//   and retries.

/** Bytes of requests one socket write gathers at most. */
const WRITE_BATCH_BYTES = 256 * 1024;
const TUNED = Symbol.for('zkq.wire.tuned');
const STATE = { CONNECTING: 1, CONNECTED: 2, CONNECTED_READ_ONLY: 3, CLOSING: -1 } as const;
const PIPE_OP = { CREATE: 1, DELETE: 2, EXISTS: 3, GET_DATA: 4, SET_DATA: 5, PING: 11, GET_CHILDREN2: 12 } as const;
const PIPE_OP_MORE = { AUTH: 100, SET_WATCHES: 101, CLOSE_SESSION: -11 } as const;

interface PacketLike {
  request: { header: { xid: number; type: number } | null; toBuffer(): Buffer };
  /** The request's bytes, serialized when queued. */
  [TUNED]?: Buffer | undefined;
}
interface SocketLike {
  write(buffer: Buffer): boolean;
  destroy(): void;
  destroyed?: boolean;
}
type Reply = (err: unknown, response?: { header: { err: number }; payload: Record<string, unknown> }) => void;
interface ManagerLike {
  state: number;
  xid: number;
  socket?: SocketLike;
  pendingBuffer: Buffer | null;
  pendingQueue: PacketLike[];
  packetQueue: { queue: PacketLike[]; shift(): PacketLike | undefined } & Pick<
    NodeJS.EventEmitter,
    'on' | 'removeAllListeners'
  >;
  onPacketQueueReadable(): void;
  onSocketData(buffer: Buffer): void;
  queue(request: object, callback: Reply): void;
  registerDataWatcher(path: string, watcher: unknown): void;
  registerChildWatcher(path: string, watcher: unknown): void;
  registerExistenceWatcher(path: string, watcher: unknown): void;
}
type RecordClass = new () => Record<string, unknown>;
type Methods = Record<string, unknown> | undefined;
interface PipeInternals {
  version: unknown;
  jute: {
    OP_CODES?: Record<string, unknown>;
    Request?: (new (header: unknown, payload: unknown) => object) & { prototype?: Methods };
    protocol?: Record<string, unknown>;
  };
  specification: { protocol?: Record<string, unknown> };
  ConnectionManager: { prototype?: Methods; STATES?: Record<string, unknown> };
  PacketQueue: { prototype?: Methods };
  Exception: { NO_NODE?: unknown; OK?: unknown };
  Path: { validate?: unknown };
  /** The prototype of the client being tuned (the module does not export the class). */
  Client?: Methods;
}

function loadPipeInternals(client?: WireClient): PipeInternals {
  const req = createRequire(import.meta.url);
  const lib = (file: string) => req(`node-zookeeper-client/lib/${file}`);
  return {
    version: (req('node-zookeeper-client/package.json') as { version?: unknown }).version,
    jute: lib('jute/index.js'),
    specification: lib('jute/specification.json'),
    ConnectionManager: lib('ConnectionManager.js'),
    PacketQueue: lib('PacketQueue.js'),
    Exception: lib('Exception.js'),
    Path: lib('Path.js'),
    ...(client ? { Client: Object.getPrototypeOf(client) as Methods } : {}),
  };
}

/** The statements, per function, that the request pipe relies on or re-implements. */
const PIPE_STATEMENTS: [owner: 'ConnectionManager' | 'PacketQueue' | 'Request' | 'Client', fn: string, text: string][] =
  [
    ['ConnectionManager', 'connect', "self.socket.on('data', self.onSocketData.bind(self))"],
    ['ConnectionManager', 'onSocketDrain', 'this.onPacketQueueReadable()'],
    ['ConnectionManager', 'onSocketData', 'if (buffer.length === size + 4) {'],
    ['ConnectionManager', 'onSocketData', 'self.onPacketQueueReadable();'],
    ['ConnectionManager', 'onSocketData', 'if (self.pendingBuffer) {'],
    ['ConnectionManager', 'onPacketQueueReadable', 'header.type !== jute.OP_CODES.AUTH) {'],
    ['ConnectionManager', 'onPacketQueueReadable', 'header.xid = this.xid;'],
    ['ConnectionManager', 'onPacketQueueReadable', 'if (!this.socket.write(packet.request.toBuffer())) {'],
    ['ConnectionManager', 'onPacketQueueReadable', 'if (header.type === jute.OP_CODES.CLOSE_SESSION) {'],
    ['PacketQueue', 'push', "this.queue.push(packet);\n\n    this.emit('readable');"],
    [
      'Request',
      'toBuffer',
      'offset += 4;\n\n    if (this.header) {\n        offset += this.header.serialize(buffer, offset);',
    ],
    ['Client', 'create', 'payload.flags = mode;'],
    ['Client', 'setData', 'next(null, response.payload.stat);'],
    ['Client', 'getData', 'self.connectionManager.registerDataWatcher(path, watcher);'],
    ['Client', 'exists', 'error.getCode() !== Exception.NO_NODE'],
    ['Client', 'exists', 'existence ? response.payload.stat : null'],
    ['Client', 'getChildren', 'self.connectionManager.registerChildWatcher(path, watcher);'],
  ];

/** What differs, in the given wire client internals, from what the request pipe relies on (empty: all fine). */
export function requestPipeProblems(internals: PipeInternals = loadPipeInternals()): string[] {
  const problems: string[] = [];
  const { version, jute, specification, ConnectionManager, PacketQueue, Exception, Path } = internals;
  if (version !== WIRE_CLIENT_VERSION) problems.push(`installed version is ${String(version)}`);
  for (const [name, code] of Object.entries({ ...PIPE_OP, ...PIPE_OP_MORE })) {
    if (jute.OP_CODES?.[name] !== code) problems.push(`jute.OP_CODES.${name} is not ${code}`);
  }
  const states = { ...STATE, DISCONNECTED: 0, CLOSED: -2, SESSION_EXPIRED: -3, AUTHENTICATION_FAILED: -4 };
  for (const [name, value] of Object.entries(states)) {
    if (ConnectionManager.STATES?.[name] !== value) problems.push(`ConnectionManager.STATES.${name} is not ${value}`);
  }
  if (
    JSON.stringify(specification.protocol?.RequestHeader) !==
    '[{"name":"xid","type":"int"},{"name":"type","type":"int"}]'
  ) {
    problems.push('the request header is no longer (xid: int, type: int)');
  }
  for (const name of [
    'RequestHeader',
    'CreateRequest',
    'DeleteRequest',
    'SetDataRequest',
    'GetDataRequest',
    'ExistsRequest',
    'GetChildren2Request',
  ]) {
    if (typeof jute.protocol?.[name] !== 'function') problems.push(`jute.protocol.${name} is missing`);
  }
  if (Exception.NO_NODE !== -101 || Exception.OK !== 0) problems.push('Exception.NO_NODE or OK changed');
  if (typeof Path.validate !== 'function') problems.push('Path.validate is missing');
  const binding = "this.packetQueue.on('readable', this.onPacketQueueReadable.bind(this))";
  if (!String(ConnectionManager).includes(binding)) problems.push(`ConnectionManager no longer does \`${binding}\``);
  const owners = {
    ConnectionManager: ConnectionManager.prototype,
    PacketQueue: PacketQueue.prototype,
    Request: jute.Request?.prototype,
    Client: internals.Client,
  };
  for (const [owner, method, statement] of PIPE_STATEMENTS) {
    if (owner === 'Client' && !internals.Client) continue;
    const fn = owners[owner]?.[method];
    if (typeof fn !== 'function' || !fn.toString().includes(statement)) {
      problems.push(`${owner}.prototype.${method} no longer does \`${statement.split('\n').pop()?.trim()}\``);
    }
  }
  return problems;
}

/** Per client class: the internals, or what differs from the checked ones. */
const pipeChecks = new Map<object, PipeInternals | string[]>();

function checkPipe(client: WireClient): PipeInternals | string[] {
  const proto = Object.getPrototypeOf(client) as object;
  let checked = pipeChecks.get(proto);
  if (!checked) {
    try {
      const internals = loadPipeInternals(client);
      const problems = requestPipeProblems(internals);
      checked = problems.length > 0 ? problems : internals;
    } catch (err) {
      checked = [`its internals do not load (${String(err)})`];
    }
    pipeChecks.set(proto, checked);
  }
  return checked;
}

/**
 * Installs the request pipe on `client` (not yet connected). Returns what
 * differs from the checked wire client instead, leaving the client as it is
 * (it works, only slower), when the installed one is not that release.
 */
export function tuneClient(client: WireClient): string[] {
  const checked = checkPipe(client);
  if (Array.isArray(checked)) return checked;
  const manager = (client as unknown as { connectionManager?: ManagerLike }).connectionManager;
  if (!manager) return ['the client has no connection manager'];
  const marks = manager as unknown as Record<symbol, unknown>;
  if (marks[TUNED]) return [];
  marks[TUNED] = true;
  coalesceWrites(manager);
  frameReplies(manager);
  if ((client as unknown as { options?: { retries?: unknown } }).options?.retries === 0) {
    sendDirectly(client, manager, checked);
  }
  return [];
}

function coalesceWrites(m: ManagerLike): void {
  let scheduled = false;
  const sendScheduled = () => {
    scheduled = false;
    m.onPacketQueueReadable();
  };
  m.packetQueue.removeAllListeners('readable'); // the manager's own: it writes each request at once
  m.packetQueue.on('readable', () => {
    const queued = m.packetQueue.queue;
    const packet = queued[queued.length - 1];
    if (packet && m.state !== STATE.CONNECTED && m.state !== STATE.CONNECTED_READ_ONLY && isSessionSetup(packet)) {
      // A reconnection queues its auth and set-watches packets behind the requests that waited for
      // it: those would reach the server on a connection with no identity yet (NoAuth on nodes of
      // the creator's ACL). They go first, in the order queued.
      queued.pop();
      let at = 0;
      while (at < queued.length && isSessionSetup(queued[at] as PacketLike)) at++;
      queued.splice(at, 0, packet);
    }
    if (packet && !packet[TUNED]) {
      try {
        packet[TUNED] = packet.request.toBuffer();
      } catch (err) {
        queued.pop(); // as if never queued: the caller gets the error, no reply is awaited
        throw err;
      }
    }
    if (!scheduled) {
      scheduled = true;
      process.nextTick(sendScheduled);
    }
  });
  m.onPacketQueueReadable = () => sendQueued(m);
}

/** The manager's onPacketQueueReadable, sending everything queued in one write. */
function sendQueued(m: ManagerLike): void {
  if (m.state !== STATE.CONNECTED && m.state !== STATE.CONNECTED_READ_ONLY && m.state !== STATE.CLOSING) return;
  // nothing but the SASL exchange goes out before it completes (a server enforcing it would close the connection)
  if (m.state !== STATE.CLOSING && (m as unknown as Record<symbol, SaslExchange | undefined>)[SASL]?.gated) return;
  let chunks: Buffer[] = [];
  let bytes = 0;
  for (let packet = m.packetQueue.shift(); packet !== undefined; packet = m.packetQueue.shift()) {
    const header = packet.request.header;
    const serialized = packet[TUNED];
    if (header !== null && header.type !== PIPE_OP.PING && header.type !== PIPE_OP_MORE.AUTH) {
      header.xid = m.xid;
      m.xid += 1;
      m.pendingQueue.push(packet);
      if (serialized) serialized.writeInt32BE(header.xid, 4);
    }
    const chunk = serialized ?? packet.request.toBuffer();
    packet[TUNED] = undefined;
    chunks.push(chunk);
    bytes += chunk.length;
    if (header?.type === PIPE_OP_MORE.CLOSE_SESSION) break; // the last packet sent
    if (bytes >= WRITE_BATCH_BYTES) {
      // Back pressure, as the manager does it: 'drain' calls this again.
      if (!writeAll(m, chunks, bytes)) return;
      chunks = [];
      bytes = 0;
    }
  }
  if (chunks.length > 0) writeAll(m, chunks, bytes);
}

/** An auth or set-watches packet: what a connection must send before any request. */
function isSessionSetup(packet: PacketLike): boolean {
  const type = packet.request.header?.type;
  return type === PIPE_OP_MORE.AUTH || type === PIPE_OP_MORE.SET_WATCHES;
}

function writeAll(m: ManagerLike, chunks: Buffer[], bytes: number): boolean {
  const socket = m.socket as SocketLike;
  return socket.write(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, bytes));
}

function frameReplies(m: ManagerLike): void {
  const handlePacket = m.onSocketData;
  markDeliveries(m);
  let parts: Buffer[] = [];
  let partBytes = 0;
  let partsOf: SocketLike | undefined;
  m.onSocketData = (chunk: Buffer) => {
    const socket = m.socket;
    if (partsOf !== socket) parts = []; // left by a closed connection
    let buffer = chunk;
    if (parts.length > 0) {
      parts.push(chunk);
      partBytes += chunk.length;
      if ((parts[0] as Buffer).length < 4 && partBytes >= 4) parts = [Buffer.concat(parts, partBytes)];
      const first = parts[0] as Buffer;
      if (first.length < 4 || partBytes < first.readInt32BE(0) + 4) return;
      buffer = parts.length === 1 ? first : Buffer.concat(parts, partBytes);
    }
    let at = 0;
    try {
      while (buffer.length - at >= 4) {
        const end = at + 4 + buffer.readInt32BE(at);
        if (end < at + 4) {
          at = buffer.length;
          socket?.destroy(); // a negative length: not a ZooKeeper stream, reconnect
          return;
        }
        if (end > buffer.length) break;
        const packet = buffer.subarray(at, end);
        at = end;
        m.pendingBuffer = null;
        const refused = m.state === STATE.CONNECTING ? undefined : refusalCode(packet);
        if (refused !== undefined) refuse(m, refused);
        const sasl = (m as unknown as Record<symbol, SaslExchange | undefined>)[SASL];
        if (packet.length < (m.state === STATE.CONNECTING ? connectReplyBytes(packet) : REPLY_HEADER_BYTES)) {
          at = buffer.length;
          socket?.destroy(); // shorter than any reply: not a ZooKeeper stream (or read misaligned), reconnect
          return;
        }
        if (sasl?.xid !== undefined && m.state !== STATE.CONNECTING && packet.readInt32BE(4) === sasl.xid) {
          onSaslReply(m, sasl, packet, refused !== undefined);
          continue;
        }
        if (!handleWhole(m, handlePacket, packet, socket)) {
          at = buffer.length; // a reply that does not parse: the connection is dropped, the rest not read
          return;
        }
        if (m.socket !== socket || socket?.destroyed) {
          at = buffer.length; // the handler dropped the connection (a reply out of order): the rest is not read
          return;
        }
      }
    } finally {
      // Also when a callback throws, as the client keeps the unread bytes for the next chunk.
      parts = at < buffer.length ? [buffer.subarray(at)] : [];
      partBytes = buffer.length - at;
      partsOf = socket;
    }
  };
}

/** A reply at its shortest: the length, then a reply header (xid, zxid, err). */
const REPLY_HEADER_BYTES = 4 + 16;
/** A connect reply at its shortest: the length, protocol version, timeout, session id, an empty password. */
const CONNECT_REPLY_BYTES = 4 + 20;
/** Bytes a connect reply must have: its password's length read where it is, if there (the client's parser reads past the end). */
function connectReplyBytes(packet: Buffer): number {
  return packet.length < CONNECT_REPLY_BYTES
    ? CONNECT_REPLY_BYTES
    : CONNECT_REPLY_BYTES + Math.max(0, packet.readInt32BE(20));
}

/** Set while the manager's handler hands a reply on (a request's callback, a watch event, a state change). */
let delivering = false;

/**
 * Hands one whole packet to the manager's own handler. A reply that does not
 * parse (a length running past its end: garbage, or a stream read out of
 * step) throws from the client's parser inside the socket's data handler,
 * where nobody can catch it: the connection is dropped instead (the client
 * reconnects) and false returned. Whatever the handler took off the pending
 * queue without answering it (that reply, or one whose xid is not the
 * request's, which the handler answers by dropping the connection) is told
 * of a connection loss, so that it waits for nothing. An exception thrown
 * while a reply is handed on is the receiver's own and goes on.
 */
function handleWhole(m: ManagerLike, handlePacket: (b: Buffer) => void, packet: Buffer, socket?: SocketLike): boolean {
  const head = m.pendingQueue[0] as (PacketLike & { callback?: Cb }) | undefined;
  const callback = head?.callback;
  if (head && callback) {
    head.callback = (...args) => {
      delivering = true;
      callback(...args);
    };
  }
  parsingOwnMulti = head?.request instanceof WriteMultiRequest;
  delivering = false;
  let parsed = true;
  try {
    handlePacket.call(m, packet);
  } catch (err) {
    if (delivering) throw err;
    parsed = false;
    socket?.destroy();
  } finally {
    parsingOwnMulti = false;
    if (head && callback) head.callback = callback;
    const unanswered = head && m.pendingQueue[0] !== head && !m.pendingQueue.includes(head) && !delivering;
    delivering = false;
    if (unanswered) callback?.(wireException(zookeeper.Exception.CONNECTION_LOSS));
  }
  return parsed;
}

/** Marks every way the manager hands a reply on (see handleWhole). */
function markDeliveries(m: ManagerLike): void {
  const marked = m as unknown as {
    emit: (...args: unknown[]) => boolean;
    watcherManager?: { emit: (...args: unknown[]) => unknown };
  };
  const emit = marked.emit;
  marked.emit = function (this: unknown, ...args: unknown[]) {
    delivering = true;
    return emit.apply(this, args);
  };
  const watchers = marked.watcherManager;
  if (watchers) {
    const emitWatch = watchers.emit;
    watchers.emit = function (this: unknown, ...args: unknown[]) {
      delivering = true;
      return emitWatch.apply(this, args);
    };
  }
}

type Cb = (...args: unknown[]) => void;

/** The client's single-request methods without the retry wrapper (its `retries: 0` behaviour). */
function sendDirectly(client: WireClient, m: ManagerLike, internals: PipeInternals): void {
  const { jute, Exception } = internals;
  const protocol = jute.protocol as Record<string, RecordClass>;
  const Request = jute.Request as NonNullable<PipeInternals['jute']['Request']>;
  const validate = internals.Path.validate as (path: string) => void;
  const send = (type: number, name: string, fields: Record<string, unknown>, reply: Reply) => {
    const header = new (protocol.RequestHeader as RecordClass)();
    header.type = type;
    const payload = Object.assign(new (protocol[name] as RecordClass)(), fields);
    m.queue(new Request(header, payload), reply);
  };
  const copy = (data: Buffer) => Buffer.from(data);
  const c = client as unknown as Record<string, Cb>;
  c.create = (path, ...rest) => {
    validate(path as string);
    let data: Buffer | undefined;
    let acls: { toRecord(): unknown }[] = (zookeeper.ACL as unknown as { OPEN_ACL_UNSAFE: [] }).OPEN_ACL_UNSAFE;
    let mode: number = zookeeper.CreateMode.PERSISTENT;
    let callback: Cb | undefined;
    for (const arg of rest) {
      if (Array.isArray(arg)) acls = arg;
      else if (typeof arg === 'number') mode = arg;
      else if (Buffer.isBuffer(arg)) data = arg;
      else if (typeof arg === 'function') callback = arg as Cb;
    }
    const done = callback as Cb;
    const fields = { path, acl: acls.map((a) => a.toRecord()), flags: mode, ...(data ? { data: copy(data) } : {}) };
    send(PIPE_OP.CREATE, 'CreateRequest', fields, (err, res) => (err ? done(err) : done(null, res?.payload.path)));
  };
  c.remove = (path, version, callback) => {
    const [v, done] = callback ? [version, callback as Cb] : [-1, version as Cb];
    validate(path as string);
    send(PIPE_OP.DELETE, 'DeleteRequest', { path, version: v }, (err) => done(err));
  };
  c.setData = (path, data, version, callback) => {
    const [v, done] = callback ? [version, callback as Cb] : [-1, version as Cb];
    validate(path as string);
    send(PIPE_OP.SET_DATA, 'SetDataRequest', { path, data: copy(data as Buffer), version: v }, (err, res) =>
      err ? done(err) : done(null, res?.payload.stat),
    );
  };
  c.getData = (path, watcher, callback) => {
    const [w, done] = callback ? [watcher, callback as Cb] : [undefined, watcher as Cb];
    validate(path as string);
    send(PIPE_OP.GET_DATA, 'GetDataRequest', { path, watch: typeof w === 'function' }, (err, res) => {
      if (err) return done(err);
      if (w) m.registerDataWatcher(path as string, w);
      done(null, res?.payload.data, res?.payload.stat);
    });
  };
  c.exists = (path, watcher, callback) => {
    const [w, done] = callback ? [watcher, callback as Cb] : [undefined, watcher as Cb];
    validate(path as string);
    send(PIPE_OP.EXISTS, 'ExistsRequest', { path, watch: typeof w === 'function' }, (err, res) => {
      if (err && wireErrorCode(err) !== Exception.NO_NODE) return done(err);
      const existence = res?.header.err === Exception.OK;
      if (w && existence) m.registerDataWatcher(path as string, w);
      else if (w) m.registerExistenceWatcher(path as string, w);
      done(null, existence ? res?.payload.stat : null);
    });
  };
  c.getChildren = (path, watcher, callback) => {
    const [w, done] = callback ? [watcher, callback as Cb] : [undefined, watcher as Cb];
    validate(path as string);
    send(PIPE_OP.GET_CHILDREN2, 'GetChildren2Request', { path, watch: typeof w === 'function' }, (err, res) => {
      if (err) return done(err);
      if (w) m.registerChildWatcher(path as string, w);
      done(null, res?.payload.children, res?.payload.stat);
    });
  };
}
