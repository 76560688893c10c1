/**
 * The edge with node-zookeeper-client: conversions between its objects and
 * the session layer's own types, and the one runtime extension of the client
 * (the read-only multi, below). Only this file and session.ts import it.
 */
import { createRequire } from 'node:module';
import zookeeper from 'node-zookeeper-client';
import { permissionBits } from './acl.js';
import { WireClientMismatchError } from './errors.js';
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

// ---- read-only multi ----------------------------------------------------------
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

/** The exact release of node-zookeeper-client the read-only multi extension was written against. */
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

type Deserialize = (this: { results: unknown }, buffer: Buffer, offset: number) => number;
interface WireInternals {
  version: unknown;
  jute: { OP_CODES?: Record<string, unknown>; TransactionResponse?: { prototype?: Record<PropertyKey, unknown> } };
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
    ConnectionManager: req('node-zookeeper-client/lib/ConnectionManager.js'),
  };
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
  ] as const) {
    if (codes[name] !== code) problems.push(`jute.OP_CODES.${name} is not ${code}`);
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

function teachReadResults(proto: Record<PropertyKey, unknown>): void {
  if (proto[PATCHED]) return;
  const original = proto.deserialize as Deserialize;
  const deserialize: Deserialize = function (buffer, offset) {
    const read = parseReadReply(buffer, offset);
    if (!read) return original.call(this, buffer, offset);
    this.results = read.results;
    return read.bytes;
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
 * A read-only multi as the connection manager handles requests: it sets
 * `header.xid`, reads `header.type` to pick the reply parser, hands the
 * payload a chroot, and sends `toBuffer()`.
 */
class ReadMultiRequest {
  /** MULTI picks the multi reply parser; the bytes sent say 22. */
  readonly header = { xid: 0, type: OP.MULTI };
  private chroot = '';
  readonly payload = {
    setChrootPath: (path: string | undefined) => {
      this.chroot = path ?? '';
    },
  };

  constructor(private readonly reads: readonly WireRead[]) {}

  private full(path: string): string {
    if (!this.chroot) return path;
    return path === '/' ? this.chroot : this.chroot + path;
  }

  toBuffer(): Buffer {
    const paths = this.reads.map((r) => Buffer.from(this.full(r.path)));
    let size = 8 + MULTI_HEADER_BYTES;
    for (const p of paths) size += MULTI_HEADER_BYTES + 4 + p.length + 1;
    const buffer = Buffer.alloc(4 + size);
    let at = buffer.writeInt32BE(size, 0);
    at = buffer.writeInt32BE(this.header.xid, at);
    at = buffer.writeInt32BE(OP.MULTI_READ, at);
    this.reads.forEach((r, i) => {
      const path = paths[i] as Buffer;
      at = buffer.writeInt32BE(r.op === 'getData' ? OP.GET_DATA : OP.GET_CHILDREN, at);
      at = buffer.writeUInt8(0, at);
      at = buffer.writeInt32BE(-1, at);
      at = buffer.writeInt32BE(path.length, at);
      at += path.copy(buffer, at);
      at = buffer.writeUInt8(0, at); // no watch
    });
    at = buffer.writeInt32BE(-1, at);
    at = buffer.writeUInt8(1, at);
    buffer.writeInt32BE(-1, at);
    return buffer;
  }
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
  const manager = (client as unknown as { connectionManager?: unknown }).connectionManager;
  const { ConnectionManager } = installed as { ConnectionManager: WireInternals['ConnectionManager'] };
  if (!(manager instanceof ConnectionManager)) {
    callback(
      new WireClientMismatchError(WIRE_CLIENT_VERSION, ['the client does not use the checked ConnectionManager']),
    );
    return;
  }
  (manager as unknown as WireManager).queue(new ReadMultiRequest(reads), (err, response) => {
    if (err) callback(err);
    else callback(null, response?.payload?.results as WireReadResult[] | undefined);
  });
}
