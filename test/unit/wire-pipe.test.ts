/**
 * wire.ts's request pipe on node-zookeeper-client, without a server: one
 * socket write per tick, replies framed by offset, the single-request methods
 * without the retry wrapper. Each behaviour is checked against the untouched
 * client fed the same bytes: same bytes written, same callbacks, same watches.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import zookeeper from 'node-zookeeper-client';
import { sendReadMulti, tuneClient, wireAcl } from '../../packages/core/src/zk/wire.ts';
import {
  connectReply,
  type FakeWire,
  fakeWire,
  framed,
  int,
  multiHeader,
  nextTick,
  notification,
  replyHeader,
  statBytes,
  str,
} from '../helpers/wire-bytes.ts';

type Log = unknown[][];
/** A callback that records its arguments, errors as their codes. */
const recorder =
  (log: Log, name: string) =>
  (...args: unknown[]) => {
    log.push([
      name,
      ...args.map((a) =>
        a && typeof a === 'object' && 'getCode' in a ? { code: (a as zookeeper.Exception).getCode() } : a,
      ),
    ]);
  };
const watchRecorder = (log: Log, name: string) => (e: zookeeper.Event) => log.push([name, e.getType(), e.getPath()]);

/** One request of each kind the session sends (xids 7 to 14), and their replies with two watch events among them. */
function issueAll(wire: FakeWire, log: Log): void {
  const c = wire.client;
  c.getData('/a', watchRecorder(log, 'data watch /a'), recorder(log, 'getData'));
  c.exists('/missing', watchRecorder(log, 'exists watch /missing'), recorder(log, 'exists'));
  c.getChildren('/p', recorder(log, 'getChildren'));
  c.create(
    '/n',
    Buffer.from('v'),
    wireAcl([{ scheme: 'digest', id: 'u:hash=', perms: 'rwcda' }]),
    zookeeper.CreateMode.EPHEMERAL,
    recorder(log, 'create'),
  );
  c.setData('/a', Buffer.from('w'), 3, recorder(log, 'setData'));
  c.remove('/gone', 2, recorder(log, 'remove'));
  c.transaction().create('/t').check('/a', 0).commit(recorder(log, 'multi'));
  sendReadMulti(c, [{ op: 'getData', path: '/a' }], recorder(log, 'readMulti'));
}

const REPLIES = Buffer.concat([
  framed(replyHeader(7), str('abc'), statBytes()),
  framed(replyHeader(8, -101)),
  notification(3, '/a'),
  framed(replyHeader(9), int(2), str('x'), str('yy'), statBytes()),
  framed(replyHeader(10), str('/n')),
  framed(replyHeader(11), statBytes()),
  framed(replyHeader(12, -101)),
  framed(replyHeader(13), multiHeader(1, false, 0), str('/t'), multiHeader(13, false, 0), multiHeader(-1, true, -1)),
  notification(1, '/missing'),
  framed(replyHeader(14), multiHeader(4, false, 0), str('abc'), statBytes(), multiHeader(-1, true, -1)),
]);

/** What the untouched client writes and reports for `issueAll` fed REPLIES in one chunk. */
function reference(): { written: Buffer; log: Log } {
  const wire = fakeWire({ tuned: false });
  const log: Log = [];
  issueAll(wire, log);
  wire.receive(REPLIES);
  return { written: Buffer.concat(wire.written()), log };
}

async function tunedWithAllIssued(): Promise<{ wire: FakeWire; log: Log }> {
  const wire = fakeWire({ tuned: true });
  const log: Log = [];
  issueAll(wire, log);
  await nextTick();
  return { wire, log };
}

describe('writes: one socket write per tick', () => {
  test('the requests of one tick go out together on the next, byte for byte as the client writes them one by one', async () => {
    const ref = reference();
    const wire = fakeWire({ tuned: true });
    issueAll(wire, []);
    assert.equal(wire.written().length, 0, 'nothing is written within the tick');
    await nextTick();
    assert.equal(wire.written().length, 1);
    assert.deepEqual(wire.written()[0], ref.written);
    assert.equal(wire.manager.pendingQueue.length, 8);
    assert.equal(wire.manager.xid, 15);
  });

  test('auth and ping packets keep their place and take no xid; close is the last packet', async () => {
    const issue = (wire: FakeWire) => {
      wire.client.addAuthInfo('digest', Buffer.from('u:p'));
      (wire.manager.onSocketTimeout as () => void).call(wire.manager); // queues a ping
      wire.client.getData('/a', () => undefined);
      wire.client.close();
    };
    const plain = fakeWire({ tuned: false });
    issue(plain);
    const wire = fakeWire({ tuned: true });
    issue(wire);
    await nextTick();
    assert.deepEqual(wire.written(), [Buffer.concat(plain.written())]);
    const sent = wire.written()[0] as Buffer;
    assert.equal(sent.readInt32BE(4), -4, 'auth first, xid -4');
    assert.equal(wire.manager.pendingQueue.length, 2, 'getData and close await replies; auth and ping do not');
    assert.equal(wire.manager.xid, 9);
  });

  test('requests queued while connecting go out, after auth, in the write the connect reply triggers', async () => {
    const run = (wire: FakeWire) => {
      wire.client.addAuthInfo('digest', Buffer.from('u:p'));
      (wire.manager.onSocketConnected as () => void).call(wire.manager); // connect request, then auth queued
      wire.client.getData('/a', () => undefined);
    };
    const plain = fakeWire({ tuned: false, state: 1 });
    run(plain);
    plain.receive(connectReply());
    const wire = fakeWire({ tuned: true, state: 1 });
    run(wire);
    await nextTick();
    assert.equal(wire.written().length, 1, 'only the connect request while connecting');
    wire.receive(connectReply());
    assert.equal(wire.manager.state, 2);
    assert.equal(wire.written().length, 2, 'auth and getData in one write, at once');
    assert.deepEqual(Buffer.concat(wire.written()), Buffer.concat(plain.written()));
  });

  test('a request that cannot be serialized throws to its caller and takes no xid', () => {
    const wire = fakeWire({ tuned: true });
    assert.throws(() =>
      wire.client
        .transaction()
        .check('/a', 2 ** 40)
        .commit(() => undefined),
    );
    const log: Log = [];
    wire.client.getData('/a', recorder(log, 'getData'));
    return nextTick().then(() => {
      wire.receive(framed(replyHeader(7), str('abc'), statBytes()));
      assert.equal(log.length, 1);
      assert.equal(log[0]?.[1], null, 'the next request is answered as xid 7');
      assert.equal(wire.socket.destroyed, false);
    });
  });

  test('back pressure: a full socket stops the sending until it drains', async () => {
    const wire = fakeWire({ tuned: true });
    let full = true;
    wire.socket.write = function (b: Buffer) {
      this.written.push(b);
      return !full;
    };
    const big = Buffer.alloc(200 * 1024);
    for (const p of ['/a', '/b', '/c']) wire.client.setData(p, big, -1, () => undefined);
    await nextTick();
    assert.equal(wire.written().length, 1, 'the first 256 KB batch, then the socket is full');
    assert.equal(wire.manager.pendingQueue.length, 2);
    full = false;
    (wire.manager.onSocketDrain as () => void).call(wire.manager);
    assert.equal(wire.written().length, 2);
    assert.equal(wire.manager.pendingQueue.length, 3);
  });
});

describe('reads: packets framed by offset', () => {
  test('every reply and watch event is handled as the client itself handles them', async () => {
    const ref = reference();
    assert.equal(ref.log.length, 10, 'eight replies and two watch events');
    const { wire, log } = await tunedWithAllIssued();
    wire.receive(REPLIES);
    assert.deepEqual(log, ref.log);
  });

  test('the input split at every byte boundary gives the same replies and events', async () => {
    const ref = reference();
    for (let cut = 1; cut < REPLIES.length; cut++) {
      const { wire, log } = await tunedWithAllIssued();
      wire.receive(REPLIES.subarray(0, cut));
      wire.receive(REPLIES.subarray(cut));
      assert.deepEqual(log, ref.log, `split at byte ${cut}`);
    }
  });

  test('the input one byte at a time gives the same replies and events', async () => {
    const ref = reference();
    const { wire, log } = await tunedWithAllIssued();
    for (let i = 0; i < REPLIES.length; i++) wire.receive(REPLIES.subarray(i, i + 1));
    assert.deepEqual(log, ref.log);
  });

  test('several packets in one chunk are parsed without copying the input', async () => {
    const { wire } = await tunedWithAllIssued();
    const { wire: again } = await tunedWithAllIssued();
    const concat = Buffer.concat;
    let copies = 0;
    Buffer.concat = (...args: Parameters<typeof concat>) => {
      copies++;
      return concat(...args);
    };
    try {
      wire.receive(REPLIES);
      assert.equal(copies, 0);
      // A packet split in three chunks is joined once, when complete.
      assert.ok(REPLIES.readInt32BE(0) + 4 > 20);
      again.receive(REPLIES.subarray(0, 10));
      again.receive(REPLIES.subarray(10, 20));
      assert.equal(copies, 0);
      again.receive(REPLIES.subarray(20));
      assert.equal(copies, 1);
    } finally {
      Buffer.concat = concat;
    }
  });

  test('bytes left by a closed connection are not put in front of the next one', async () => {
    const wire = fakeWire({ tuned: true });
    const log: Log = [];
    wire.client.getData('/a', recorder(log, 'lost'));
    await nextTick();
    wire.receive(framed(replyHeader(7), str('abc'), statBytes()).subarray(0, 30));
    (wire.manager.cleanupPendingQueue as (code: number) => void).call(wire.manager, -4);
    wire.replaceSocket();
    wire.client.getData('/b', recorder(log, 'after'));
    await nextTick();
    wire.receive(framed(replyHeader(8), str('xyz'), statBytes()));
    assert.deepEqual(
      log.map((l) => l.slice(0, 3)),
      [
        ['lost', { code: -4 }],
        ['after', null, Buffer.from('xyz')],
      ],
    );
    assert.equal(wire.socket.destroyed, false);
  });

  test('when a callback throws, the rest of its chunk is read with the next chunk, as by the client itself', async () => {
    const run = (wire: FakeWire, log: Log) => {
      wire.client.getData(
        '/a',
        () => {
          throw new Error('a watcher that throws');
        },
        recorder(log, 'getData /a'),
      );
      wire.client.getData('/b', recorder(log, 'getData /b'));
    };
    const chunk = Buffer.concat([
      framed(replyHeader(7), str('abc'), statBytes()),
      notification(3, '/a'),
      framed(replyHeader(8), str('xyz'), statBytes()),
    ]);
    const outcome = (wire: FakeWire, log: Log) => {
      assert.throws(() => wire.receive(chunk), /a watcher that throws/);
      assert.equal(log.length, 1);
      wire.receive(Buffer.alloc(0));
      return log;
    };
    const plainLog: Log = [];
    const plain = fakeWire({ tuned: false });
    run(plain, plainLog);
    const wire = fakeWire({ tuned: true });
    const log: Log = [];
    run(wire, log);
    await nextTick();
    assert.deepEqual(outcome(wire, log), outcome(plain, plainLog));
    assert.equal(log.length, 2);
  });

  test('a reply out of order drops the connection, its request told of a connection loss; the rest of its chunk is not read', async () => {
    const wire = fakeWire({ tuned: true });
    const log: Log = [];
    wire.client.getData('/a', recorder(log, 'a'));
    wire.client.getData('/b', recorder(log, 'b'));
    await nextTick();
    wire.receive(
      Buffer.concat([framed(replyHeader(99), str('abc'), statBytes()), framed(replyHeader(8), str('x'), statBytes())]),
    );
    assert.equal(wire.socket.destroyed, true);
    // the client took 'a' off its queue for that reply: it waited for ever; 'b' hears as the connection closes
    assert.deepEqual(log, [['a', { code: zookeeper.Exception.CONNECTION_LOSS }]]);
  });

  test('a negative packet length drops the connection', () => {
    const wire = fakeWire({ tuned: true });
    wire.receive(int(-5));
    assert.equal(wire.socket.destroyed, true);
  });
});

describe('single requests without the retry wrapper', () => {
  test("the methods are the instance's own, and only on a client created with retries 0", () => {
    const tuned = fakeWire({ tuned: true }).client as unknown as Record<string, unknown>;
    const proto = Object.getPrototypeOf(tuned) as Record<string, unknown>;
    for (const m of ['create', 'remove', 'setData', 'getData', 'exists', 'getChildren']) {
      assert.ok(Object.hasOwn(tuned, m) && tuned[m] !== proto[m], m);
    }
    const retrying = zookeeper.createClient('127.0.0.1:1', { retries: 2 });
    assert.deepEqual(tuneClient(retrying), [], 'the pipe installs on it');
    assert.equal(Object.hasOwn(retrying, 'getData'), false, 'but its requests keep their retries');
  });

  test('a connection loss fails each pending request once, as the wrapper with no retries does', async () => {
    const ref = fakeWire({ tuned: false });
    const refLog: Log = [];
    issueAll(ref, refLog);
    (ref.manager.cleanupPendingQueue as (code: number) => void).call(ref.manager, -4);
    const { wire, log } = await tunedWithAllIssued();
    (wire.manager.cleanupPendingQueue as (code: number) => void).call(wire.manager, -4);
    assert.deepEqual(log, refLog);
    assert.equal(log.length, 8);
  });
});
