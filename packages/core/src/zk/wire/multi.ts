/**
 * The read-only multi and the write multi on the wire client's connection,
 * installed at runtime on the exact release checked here.
 */
import { createRequire } from 'node:module';
import type zookeeper from 'node-zookeeper-client';
import { WireClientMismatchError } from '../errors.js';
import type { Stat } from '../types.js';
import { exactVersion, toStat, type WireClient, wireException } from './convert.js';
import { WIRE_CLIENT_VERSION } from './internals.js';
import { OP, parseReadReply, parseWriteReply, type WireReadResult, type WriteResult } from './replies.js';
import { aclBytes, ReadMultiRequest, type WireOp, type WireRead, WriteMultiRequest } from './requests.js';

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

const PATCHED = Symbol.for('zkq.wire.readMulti');

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

/** Says which request the reply about to be parsed answers (undefined: none of ours; see handleWhole). */
export function parsingReplyTo(request: unknown): void {
  parsingOwnMulti = request instanceof WriteMultiRequest;
}

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
