/**
 * The runtime extensions of node-zookeeper-client (the read-only multi and the
 * request pipe), without a server. These tests fail loudly when the installed
 * wire client is not the exact release the extensions were written against,
 * or when any internal they rely on changed: bump the pin only after
 * re-reading those internals. The request pipe's behaviour: wire-pipe.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WireClientMismatchError } from '@zkq/core';
import zookeeper from 'node-zookeeper-client';
import {
  assertReadMultiSupported,
  requestPipeProblems,
  sendReadMulti,
  tuneClient,
  WIRE_CLIENT_VERSION,
  type WireReadResult,
  wireClientProblems,
} from '../../packages/core/src/zk/wire.ts';
import { fakeWire, framed, int, long, multiHeader, replyHeader, statBytes, str } from '../helpers/wire-bytes.ts';

const fromCore = createRequire(new URL('../../packages/core/src/zk/wire.ts', import.meta.url));
const clientDir = dirname(fromCore.resolve('node-zookeeper-client/package.json'));

/**
 * sha256 of the files whose code the extensions rely on or re-implement, in
 * release 1.1.3: the manager's send loop, reply framing and state handling
 * (ConnectionManager.js), the packet queue's 'readable' event (PacketQueue.js),
 * the single-request methods and their retry wrapper (index.js), request
 * serialization and record layouts (jute), the write multi and its error
 * mapping (Transaction.js), error codes (Exception.js), path checks (Path.js)
 * and ACL records (ACL.js).
 */
const PINNED_FILES: Record<string, string> = {
  'index.js': 'abfcd1a0275dadaf95ad472ab6c76fe410187314f0d516f5ade2f37827b9925d',
  'lib/ConnectionManager.js': '51fbfd9f71e6ccfe2e09c3d3576195c05b6855670805e6b50d67e554c582a97a',
  'lib/jute/index.js': '55748531c8cb0109e6fa51470a86aac52fe2c456eb6289f53fb74c698a653461',
  'lib/jute/specification.json': 'c9764fd4c05cd8e8dc8460a18e520f70e4c8ba71730b303ae31ca86f35172c2f',
  'lib/PacketQueue.js': '6399569dde9586655764eb2aa833890488978b6fbc6cb18d073093e91cfbb112',
  'lib/Exception.js': '53ac8f6db9a5dd3d44b5ba4b28c9715a3191ddddfde02a4ffbbfca398f98ff88',
  'lib/Path.js': 'd93b9f834c34b6285a24f776a5f8b786cf01bb1e884ebffeb6426ae90c8d12d2',
  'lib/ACL.js': '482673d61fe000d7f4a29952d4792f48a6d27533eb9edd46fb8c8dd1314765eb',
  'lib/Transaction.js': '13e56e3958c8313dc497c23dfa788d7aceffc4bf832ea5dce4272da4b48c5257',
};

describe('the wire client is the one the extension was written for', () => {
  test('only the parts under zk/wire/ load it, and only the session layer (zk/) imports wire.ts', () => {
    const packages = fileURLToPath(new URL('../../packages/', import.meta.url));
    const offenders: string[] = [];
    for (const file of readdirSync(packages, { recursive: true, encoding: 'utf8' })) {
      if (!/^[^/]+\/src\/.*\.ts$/.test(file)) continue;
      const source = readFileSync(join(packages, file), 'utf8');
      if (/['"`]node-zookeeper-client['"`/]/.test(source) && !file.startsWith('core/src/zk/wire/')) {
        offenders.push(`${file} loads node-zookeeper-client`);
      }
      if (/from '[^']*\/wire\.js'/.test(source) && !/^core\/src\/zk\/[^/]+\.ts$/.test(file)) {
        offenders.push(`${file} imports wire.ts`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  test('node-zookeeper-client is installed at exactly 1.1.3, the version pinned by @zkq/core', () => {
    const installed = JSON.parse(readFileSync(join(clientDir, 'package.json'), 'utf8')) as { version: string };
    const core = JSON.parse(readFileSync(new URL('../../packages/core/package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    assert.equal(installed.version, '1.1.3', 'the read-only multi extension must be re-checked for this release');
    assert.equal(WIRE_CLIENT_VERSION, installed.version);
    assert.equal(core.dependencies['node-zookeeper-client'], installed.version, 'an exact pin, no range');
  });

  test('the files holding the internals it relies on are byte for byte those of 1.1.3', () => {
    for (const [file, hash] of Object.entries(PINNED_FILES)) {
      const actual = createHash('sha256')
        .update(readFileSync(join(clientDir, file)))
        .digest('hex');
      assert.equal(actual, hash, `node-zookeeper-client/${file} changed: re-read it before trusting wire.ts`);
    }
  });

  test('the runtime guard finds nothing amiss and the extension installs', () => {
    assert.deepEqual(wireClientProblems(), []);
    assert.doesNotThrow(() => assertReadMultiSupported());
    const client = zookeeper.createClient('127.0.0.1:1');
    const manager = (client as unknown as { connectionManager: Record<string, unknown> }).connectionManager;
    assert.equal(typeof manager.queue, 'function', 'Client keeps its ConnectionManager as .connectionManager');
  });

  test("the request pipe's runtime guard finds nothing amiss and the pipe installs on a session's client", () => {
    const client = zookeeper.createClient('127.0.0.1:1', { retries: 0 });
    assert.deepEqual(tuneClient(client), []);
    const manager = (client as unknown as { connectionManager: Record<string, unknown> }).connectionManager;
    assert.ok(Object.hasOwn(manager, 'onSocketData') && Object.hasOwn(manager, 'onPacketQueueReadable'));
    assert.ok(Object.hasOwn(client, 'getData'));
    assert.deepEqual(tuneClient(client), [], 'twice is once');
  });

  test("the request pipe's runtime guard names every difference of another copy, and leaves its client alone", () => {
    const loaded = fromCore('node-zookeeper-client/lib/ConnectionManager.js') as { STATES: Record<string, number> };
    class OtherManager {
      static STATES = { ...loaded.STATES, CLOSING: -5 };
      onPacketQueueReadable() {}
    }
    class OtherClient {
      getData() {}
    }
    const problems = requestPipeProblems({
      version: '1.2.0',
      jute: { OP_CODES: { CREATE: 1, DELETE: 2, EXISTS: 3, GET_DATA: 4, SET_DATA: 5, PING: 11, AUTH: 100 } },
      specification: { protocol: { RequestHeader: [{ name: 'type', type: 'int' }] } },
      ConnectionManager: OtherManager as never,
      PacketQueue: { prototype: {} },
      Exception: { NO_NODE: -101, OK: 0 },
      Path: {},
      Client: OtherClient.prototype as never,
    });
    for (const expected of [
      'installed version is 1.2.0',
      'jute.OP_CODES.GET_CHILDREN2 is not 12',
      'jute.OP_CODES.CLOSE_SESSION is not -11',
      'ConnectionManager.STATES.CLOSING is not -1',
      'the request header is no longer (xid: int, type: int)',
      'jute.protocol.GetDataRequest is missing',
      'Path.validate is missing',
      "ConnectionManager no longer does `this.packetQueue.on('readable', this.onPacketQueueReadable.bind(this))`",
    ]) {
      assert.ok(problems.includes(expected), `${expected} in:\n${problems.join('\n')}`);
    }
    for (const method of ['connect', 'onSocketData', 'onPacketQueueReadable']) {
      assert.ok(
        problems.some((p) => p.startsWith(`ConnectionManager.prototype.${method} no longer does`)),
        method,
      );
    }
    assert.ok(problems.some((p) => p.startsWith('PacketQueue.prototype.push no longer does')));
    assert.ok(problems.some((p) => p.startsWith('Client.prototype.getData no longer does')));
    assert.ok(problems.some((p) => p.startsWith('Client.prototype.exists no longer does')));

    // A client whose class is not the checked one is left as it is.
    const other = Object.assign(Object.create(OtherClient.prototype) as object, {
      connectionManager: { onSocketData() {} },
      options: { retries: 0 },
    });
    const found = tuneClient(other as never);
    assert.ok(
      found.some((p) => p.startsWith('Client.prototype.getData no longer does')),
      found.join('\n'),
    );
    assert.equal(Object.hasOwn(other, 'getData'), false);
  });

  test('the runtime guard names every difference of another copy', () => {
    class OtherManager {
      queue() {}
      onPacketQueueReadable() {}
    }
    const problems = wireClientProblems({
      version: '1.2.0',
      jute: {
        OP_CODES: { GET_DATA: 4, GET_CHILDREN: 8, MULTI: 15, ERROR: -1 },
        TransactionResponse: { prototype: {} },
      },
      ConnectionManager: OtherManager as never,
    });
    assert.ok(problems.includes('installed version is 1.2.0'), problems.join('\n'));
    assert.ok(problems.includes('jute.OP_CODES.MULTI is not 14'));
    assert.ok(problems.includes('jute.TransactionResponse.prototype.deserialize is missing'));
    assert.ok(problems.includes('jute.OP_CODES.CHECK is not 13'));
    assert.ok(problems.some((p) => p.startsWith('the protocol.CreateRequest record is no longer')));
    assert.ok(problems.some((p) => p.startsWith('ConnectionManager.prototype.queue no longer does')));
    assert.ok(problems.some((p) => p.startsWith('ConnectionManager.prototype.onSocketData no longer does')));
    const err = new WireClientMismatchError(WIRE_CLIENT_VERSION, problems);
    assert.equal(err.code, 'ZK_WIRE_CLIENT_MISMATCH');
    assert.match(err.message, /1\.1\.3.*installed version is 1\.2\.0/);
  });
});

// ---- a connection manager on a fake socket --------------------------------------

/** A wire client whose connection manager believes it is connected and writes to an array (the client untouched). */
function fakeConnected(connectionString = '127.0.0.1:1') {
  const wire = fakeWire({ tuned: false, connectionString });
  return {
    client: wire.client,
    written: wire.socket.written,
    receive: wire.receive,
    destroyed: () => wire.socket.destroyed,
  };
}

describe('a read-only multi through the connection manager', () => {
  test('is sent as op 22 with the xid the manager assigns, and its reply parsed per read', () => {
    const wire = fakeConnected();
    let results: WireReadResult[] | undefined;
    let error: unknown;
    sendReadMulti(
      wire.client,
      [
        { op: 'getData', path: '/a' },
        { op: 'getChildren', path: '/b' },
        { op: 'getData', path: '/missing' },
      ],
      (err, res) => {
        error = err;
        results = res;
      },
    );
    assert.equal(wire.written.length, 1);
    const expected = framed(
      int(7),
      int(22),
      multiHeader(4, false, -1),
      str('/a'),
      Buffer.from([0]),
      multiHeader(8, false, -1),
      str('/b'),
      Buffer.from([0]),
      multiHeader(4, false, -1),
      str('/missing'),
      Buffer.from([0]),
      multiHeader(-1, true, -1),
    );
    assert.deepEqual(wire.written[0], expected);

    const reply = framed(
      replyHeader(7),
      multiHeader(4, false, 0),
      str('abc'),
      statBytes(),
      multiHeader(8, false, 0),
      int(2),
      str('x'),
      str('yy'),
      multiHeader(-1, false, -101),
      int(-101),
      multiHeader(-1, true, -1),
    );
    // In two chunks, as a socket may deliver it.
    wire.receive(reply.subarray(0, 20));
    assert.equal(results, undefined);
    wire.receive(reply.subarray(20));
    assert.equal(error, null);
    assert.deepEqual(results, [
      {
        type: 4,
        data: Buffer.from('abc'),
        stat: {
          czxid: 11,
          mzxid: 12,
          ctime: 1_700_000_000_000,
          mtime: 1_700_000_000_500,
          version: 3,
          cversion: 4,
          aversion: 0,
          ephemeralOwner: '1234abcd',
          dataLength: 3,
          numChildren: 2,
          pzxid: 13,
        },
      },
      { type: 8, children: ['x', 'yy'] },
      { type: -1, err: -101 },
    ]);
    assert.equal(wire.destroyed(), false, 'the connection stays up');
  });

  test('carries the chroot of the connection string, as every request does', () => {
    const wire = fakeConnected('127.0.0.1:1/root');
    sendReadMulti(
      wire.client,
      [
        { op: 'getChildren', path: '/' },
        { op: 'getData', path: '/a' },
      ],
      () => undefined,
    );
    const sent = wire.written[0] as Buffer;
    assert.ok(sent.includes(str('/root')) && sent.includes(str('/root/a')));
  });

  test('a failed request reports the error of the whole request', () => {
    const wire = fakeConnected();
    let error: unknown;
    sendReadMulti(wire.client, [{ op: 'getData', path: '/a' }], (err) => {
      error = err;
    });
    wire.receive(framed(Buffer.concat([int(7), long(99), int(-5)])));
    assert.equal((error as { getCode(): number }).getCode(), -5);
  });

  test('a write multi reply is still parsed by the wire client itself', () => {
    const wire = fakeConnected();
    let results: { type: number; path?: string; stat?: object; err?: number }[] | undefined;
    wire.client
      .transaction()
      .create('/n')
      .setData('/m', Buffer.from('v'), 3)
      .commit((_err, res) => {
        results = res as typeof results;
      });
    wire.receive(
      framed(
        replyHeader(7),
        multiHeader(1, false, 0),
        str('/n'),
        multiHeader(5, false, 0),
        statBytes(),
        multiHeader(-1, true, -1),
      ),
    );
    assert.equal(results?.length, 2);
    assert.deepEqual(results?.[0], { type: 1, path: '/n' });
    // The client's own parser gives its Stat record (longs as 8-byte buffers), not the session's Stat.
    assert.ok(Buffer.isBuffer((results?.[1]?.stat as { czxid?: unknown } | undefined)?.czxid));

    let failure: unknown;
    wire.client
      .transaction()
      .check('/n', 1)
      .commit((err) => {
        failure = err;
      });
    wire.receive(framed(replyHeader(8), multiHeader(-1, false, -103), int(-103), multiHeader(-1, true, -1)));
    assert.equal((failure as { getCode(): number }).getCode(), -103);
  });
});
