/**
 * The check of the wire client internals the request pipe relies on or
 * re-implements, once per client class.
 */
import { createRequire } from 'node:module';
import type { WireClient } from './convert.js';
import { type Methods, PIPE_OP, PIPE_OP_MORE, STATE, WIRE_CLIENT_VERSION } from './internals.js';

export interface PipeInternals {
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

export function loadPipeInternals(client?: WireClient): PipeInternals {
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

export function checkPipe(client: WireClient): PipeInternals | string[] {
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
