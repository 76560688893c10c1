/**
 * The read-only multi extension of node-zookeeper-client, without a server.
 * These tests fail loudly when the installed wire client is not the exact
 * release the extension was written against, or when any internal it relies
 * on changed: bump the pin only after re-reading those internals.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { WireClientMismatchError } from '@zkq/core';
import zookeeper from 'node-zookeeper-client';
import {
  assertReadMultiSupported,
  sendReadMulti,
  WIRE_CLIENT_VERSION,
  type WireReadResult,
  wireClientProblems,
} from '../../packages/core/src/zk/wire.ts';

const fromCore = createRequire(new URL('../../packages/core/src/zk/wire.ts', import.meta.url));
const clientDir = dirname(fromCore.resolve('node-zookeeper-client/package.json'));

/** sha256 of the files whose code the extension relies on, in release 1.1.3. */
const PINNED_FILES: Record<string, string> = {
  'index.js': 'abfcd1a0275dadaf95ad472ab6c76fe410187314f0d516f5ade2f37827b9925d',
  'lib/ConnectionManager.js': '51fbfd9f71e6ccfe2e09c3d3576195c05b6855670805e6b50d67e554c582a97a',
  'lib/jute/index.js': '55748531c8cb0109e6fa51470a86aac52fe2c456eb6289f53fb74c698a653461',
  'lib/jute/specification.json': 'c9764fd4c05cd8e8dc8460a18e520f70e4c8ba71730b303ae31ca86f35172c2f',
};

describe('the wire client is the one the extension was written for', () => {
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
      assert.equal(actual, hash, `node-zookeeper-client/${file} changed: re-read it before trusting readMulti`);
    }
  });

  test('the runtime guard finds nothing amiss and the extension installs', () => {
    assert.deepEqual(wireClientProblems(), []);
    assert.doesNotThrow(() => assertReadMultiSupported());
    const client = zookeeper.createClient('127.0.0.1:1');
    const manager = (client as unknown as { connectionManager: Record<string, unknown> }).connectionManager;
    assert.equal(typeof manager.queue, 'function', 'Client keeps its ConnectionManager as .connectionManager');
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
    assert.ok(problems.some((p) => p.startsWith('ConnectionManager.prototype.queue no longer does')));
    assert.ok(problems.some((p) => p.startsWith('ConnectionManager.prototype.onSocketData no longer does')));
    const err = new WireClientMismatchError(WIRE_CLIENT_VERSION, problems);
    assert.equal(err.code, 'ZK_WIRE_CLIENT_MISMATCH');
    assert.match(err.message, /1\.1\.3.*installed version is 1\.2\.0/);
  });
});

// ---- a connection manager on a fake socket --------------------------------------

const int = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const str = (s: string) => Buffer.concat([int(Buffer.byteLength(s)), Buffer.from(s)]);
const multiHeader = (type: number, done: boolean, err: number) =>
  Buffer.concat([int(type), Buffer.from([done ? 1 : 0]), int(err)]);
const framed = (...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([int(body.length), body]);
};
const long = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  return b;
};
/** A Stat record: czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength, numChildren, pzxid. */
function statBytes(): Buffer {
  return Buffer.concat([
    long(11),
    long(12),
    long(1_700_000_000_000),
    long(1_700_000_000_500),
    int(3),
    int(4),
    int(0),
    long(0x1234abcd),
    int(3),
    int(2),
    long(13),
  ]);
}

/** A wire client whose connection manager believes it is connected and writes to an array. */
function fakeConnected(connectionString = '127.0.0.1:1') {
  const client = zookeeper.createClient(connectionString);
  const manager = (client as unknown as { connectionManager: Record<string, unknown> }).connectionManager;
  const written: Buffer[] = [];
  let destroyed = false;
  manager.state = 2; // STATES.CONNECTED
  manager.xid = 7;
  manager.socket = {
    write: (b: Buffer) => written.push(b) > 0,
    destroy: () => {
      destroyed = true;
    },
  };
  const receive = (b: Buffer) => (manager.onSocketData as (b: Buffer) => void).call(manager, b);
  return { client, written, receive, destroyed: () => destroyed };
}

const replyHeader = (xid: number) => Buffer.concat([int(xid), long(99), int(0)]);

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
