/**
 * wire.ts's write multi, without a server: byte for byte the request the wire
 * client's own Transaction sends (with exact versions), its reply reported as
 * Transaction.commit reports it, and the client's Transaction as the fallback.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import zookeeper from 'node-zookeeper-client';
import { tsImport } from 'tsx/esm/api';
import {
  exactVersion,
  parseWriteReply,
  sendMulti,
  toStat,
  tuneClient,
  type WireOp,
  wireAcl,
} from '../../packages/core/src/zk/wire.ts';
import {
  type FakeWire,
  fakeWire,
  framed,
  int,
  multiHeader,
  nextTick,
  replyHeader,
  statBytes,
  str,
} from '../helpers/wire-bytes.ts';

const ACL = wireAcl([
  { scheme: 'digest', id: 'user:hash=', perms: 'rwcda' },
  { scheme: 'world', id: 'anyone', perms: 'r' },
]);

const OPS: WireOp[] = [
  { op: 'create', path: '/q/rec-1', data: Buffer.from('{"n":1}'), mode: zookeeper.CreateMode.PERSISTENT },
  { op: 'create', path: '/q/claims/c-', mode: zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL },
  { op: 'create', path: '/q/ünïcødé', data: Buffer.alloc(0), mode: zookeeper.CreateMode.PERSISTENT },
  { op: 'delete', path: '/q/p-1', version: 0 },
  { op: 'delete', path: '/q/p-2', version: -1 },
  { op: 'setData', path: '/q/rec-2', data: Buffer.from('x'.repeat(300)), version: 0 },
  { op: 'setData', path: '/q/rec-3', data: Buffer.from('y'), version: 7 },
  { op: 'check', path: '/q', version: 0 },
  { op: 'check', path: '/', version: 12 },
];

/** The same ops through the wire client's own Transaction, versions made exact as the session did. */
function commitWithTransaction(wire: FakeWire, ops: readonly WireOp[], callback: (...args: unknown[]) => void): void {
  const tx = wire.client.transaction();
  for (const o of ops) {
    if (o.op === 'create') {
      if (o.data) tx.create(o.path, o.data, ACL, o.mode);
      else tx.create(o.path, ACL, o.mode);
    } else if (o.op === 'delete') exactVersion(tx.remove(o.path, o.version), o.version);
    else if (o.op === 'setData') exactVersion(tx.setData(o.path, o.data, o.version), o.version);
    else exactVersion(tx.check(o.path, o.version), o.version);
  }
  tx.commit(callback);
}

const record =
  (log: unknown[][]) =>
  (...args: unknown[]) =>
    log.push(args.map((a) => (a instanceof Error ? { code: (a as unknown as zookeeper.Exception).getCode() } : a)));

describe('a write multi serialized by wire.ts', () => {
  for (const chroot of ['', '/root']) {
    test(`is byte for byte the client's own Transaction${chroot ? ', under a chroot' : ''}`, async () => {
      const connectionString = `127.0.0.1:1${chroot}`;
      const plain = fakeWire({ tuned: false, connectionString });
      commitWithTransaction(plain, OPS, () => undefined);
      const wire = fakeWire({ tuned: true, connectionString });
      sendMulti(wire.client, OPS, ACL, () => undefined);
      await nextTick();
      assert.deepEqual(wire.written(), plain.written());
      if (chroot) assert.ok((wire.written()[0] as Buffer).includes(str('/root/q/rec-1')));
    });
  }

  test('writes version 0 as 0, where the client alone would write -1 (any version)', async () => {
    const wire = fakeWire({ tuned: true });
    sendMulti(wire.client, [{ op: 'check', path: '/a', version: 0 }], ACL, () => undefined);
    await nextTick();
    const sent = wire.written()[0] as Buffer;
    // length, xid, type, header (9), path (4 + 2), version
    assert.equal(sent.readInt32BE(4 + 8 + 9 + 6), 0);
  });

  test('its reply is reported as Transaction.commit reports it (stats converted), a failed op as that op error', () => {
    const replies = [
      framed(
        replyHeader(7),
        multiHeader(1, false, 0),
        str('/n'),
        multiHeader(2, false, 0),
        multiHeader(5, false, 0),
        statBytes(),
        multiHeader(13, false, 0),
        multiHeader(-1, true, -1),
      ),
      framed(
        replyHeader(8),
        multiHeader(-1, false, 0),
        int(0),
        multiHeader(-1, false, -103),
        int(-103),
        multiHeader(-1, false, -2),
        int(-2),
        multiHeader(-1, true, -1),
      ),
      framed(replyHeader(9, -4)),
    ];
    const run = (tuned: boolean) => {
      const wire = fakeWire({ tuned });
      const log: unknown[][] = [];
      const ops = OPS.slice(3, 6);
      for (let i = 0; i < replies.length; i++) {
        if (tuned) sendMulti(wire.client, ops, ACL, record(log));
        else commitWithTransaction(wire, ops, record(log));
      }
      return { wire, log };
    };
    const plain = run(false);
    for (const r of replies) plain.wire.receive(r);
    const tuned = run(true);
    return nextTick().then(() => {
      for (const r of replies) tuned.wire.receive(r);
      // parsed in place, a setData's Stat comes converted, as the session's toStat makes it from the client's record
      const converted = plain.log.map((entry) =>
        entry.map((arg) =>
          Array.isArray(arg)
            ? arg.map((r: { stat?: zookeeper.Stat }) => (r.stat ? { ...r, stat: toStat(r.stat) } : r))
            : arg,
        ),
      );
      assert.deepEqual(tuned.log, converted);
      const first = (tuned.log[0]?.[1] ?? []) as { stat?: { version?: unknown } }[];
      assert.equal(typeof first[2]?.stat?.version, 'number');
      assert.deepEqual(tuned.log[1]?.[0], { code: -103 });
      assert.deepEqual(tuned.log[2], [{ code: -4 }]);
    });
  });

  test("on a client of another copy of the wire client, that copy's own Transaction sends it", () => {
    // A second copy of the module, as two installed copies would give: its manager is not the checked class.
    const require = createRequire(fileURLToPath(new URL('../../packages/core/src/zk/wire.ts', import.meta.url)));
    const root = dirname(require.resolve('node-zookeeper-client/package.json'));
    const saved = Object.entries(require.cache).filter(([file]) => file.startsWith(root));
    for (const [file] of saved) delete require.cache[file];
    let other: typeof zookeeper;
    try {
      other = require('node-zookeeper-client') as typeof zookeeper;
    } finally {
      for (const [file, entry] of saved) require.cache[file] = entry;
    }
    const client = other.createClient('127.0.0.1:1', { retries: 0 });
    const manager = (client as unknown as { connectionManager: Record<string, unknown> }).connectionManager;
    const queued: { payload: { ops: { version?: number }[] } }[] = [];
    manager.queue = (request: (typeof queued)[number]) => queued.push(request);
    sendMulti(client, [{ op: 'delete', path: '/a', version: 0 }], ACL, () => undefined);
    assert.equal(queued.length, 1);
    assert.equal(queued[0]?.payload.ops[0]?.version, 0, 'with its version made exact');
  });
});

describe('a write multi reply parsed in place', () => {
  test('creates under a chroot lose it, as the client takes it off; anything but write results is left to the client', () => {
    const body = Buffer.concat([
      multiHeader(1, false, 0),
      str('/root/q/n-0000000001'),
      multiHeader(1, false, 0),
      str('/root'),
      multiHeader(2, false, 0),
      multiHeader(-1, true, -1),
    ]);
    const parsed = parseWriteReply(Buffer.concat([Buffer.alloc(3), body]), 3, '/root');
    assert.deepEqual(parsed, {
      results: [{ type: 1, path: '/q/n-0000000001' }, { type: 1, path: '/' }, { type: 2 }],
      bytes: body.length,
    });
    // a read result (getData): not a write multi's reply
    assert.equal(parseWriteReply(Buffer.concat([multiHeader(4, false, 0), int(0)]), 0), undefined);
  });
});

describe('a write multi on a client without the request pipe', () => {
  test('its reply comes with its stats converted too (the client parses it: its Stat records)', () => {
    // a client the pipe did not tune (tuneClient found a difference) still sends the multi through wire.ts
    const wire = fakeWire({ tuned: false });
    const log: unknown[][] = [];
    sendMulti(wire.client, [OPS[6] as WireOp], ACL, record(log));
    wire.receive(framed(replyHeader(7), multiHeader(5, false, 0), statBytes(), multiHeader(-1, true, -1)));
    const results = log[0]?.[1] as { type: number; stat?: Record<string, unknown> }[];
    assert.equal(log[0]?.[0], null);
    assert.equal(typeof results[0]?.stat?.czxid, 'number', 'czxid a number, as toStat makes it');
    assert.equal(results[0]?.stat?.ephemeralOwner, '1234abcd');
  });
});

describe('a write multi through a second copy of wire.ts', () => {
  test('its reply comes with its stats converted (the first copy patched the parser, its flag is not set)', async () => {
    // two installed copies of the session layer on one wire client: the parser patch is the first's.
    // tsImport loads wire.ts and every part of it afresh (node-zookeeper-client stays the one loaded).
    const second = (await tsImport(
      '../../packages/core/src/zk/wire.ts',
      import.meta.url,
    )) as typeof import('../../packages/core/src/zk/wire.ts');
    assert.notEqual(second.tuneClient, tuneClient, 'a second copy of the request pipe');
    assert.equal(second.wire, zookeeper, 'on the same wire client');
    const wire = fakeWire({ tuned: false });
    second.tuneClient(wire.client);
    const log: unknown[][] = [];
    second.sendMulti(wire.client, [OPS[6] as WireOp], ACL, record(log));
    await nextTick();
    wire.receive(framed(replyHeader(7), multiHeader(5, false, 0), statBytes(), multiHeader(-1, true, -1)));
    const results = log[0]?.[1] as { type: number; stat?: Record<string, unknown> }[];
    assert.equal(log[0]?.[0], null);
    assert.equal(typeof results[0]?.stat?.czxid, 'number', 'czxid a number, as toStat makes it');
  });
});
