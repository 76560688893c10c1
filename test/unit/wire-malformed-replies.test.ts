/**
 * Replies that do not parse (shorter than their header, a length running past
 * the packet's end, a connect reply cut short, a SASL reply cut short) never
 * throw from the socket's data handler: the connection is dropped (the client
 * reconnects) and no request is lost: the one the reply was read for gets a
 * connection loss at once, the others as the connection closes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import zookeeper from 'node-zookeeper-client';
import { acceptUnknownErrorCodes, useSasl } from '../../packages/core/src/zk/wire.ts';
import { fakeWire, framed, int, long, nextTick, replyHeader } from '../helpers/wire-bytes.ts';

const CONNECTING = 1;
const CONNECTED = 2;
const codeOf = (err: unknown): number | undefined =>
  err && typeof err === 'object' && 'getCode' in err ? (err as zookeeper.Exception).getCode() : undefined;

const MALFORMED: [name: string, reply: Buffer][] = [
  ['an empty packet', framed()],
  ['a packet shorter than a reply header', framed(int(7), int(0))],
  ['a getData reply whose data runs past its end', framed(replyHeader(7), int(1_000_000), Buffer.from('abc'))],
  ['a getData reply without its stat', framed(replyHeader(7), int(3), Buffer.from('abc'))],
];

for (const [name, reply] of MALFORMED) {
  test(`${name}: no throw, the connection dropped, no request lost`, async () => {
    acceptUnknownErrorCodes();
    const wire = fakeWire({ tuned: true });
    const got: unknown[] = [];
    wire.client.getData('/a', (err: unknown) => got.push(err));
    wire.client.getData('/b', (err: unknown) => got.push(err));
    await nextTick();
    assert.doesNotThrow(() => wire.receive(reply));
    assert.equal(wire.socket.destroyed, true, 'the connection is dropped');
    assert.equal(got.length + wire.manager.pendingQueue.length, 2, 'each request answered or still awaiting');
    for (const err of got) assert.equal(codeOf(err), zookeeper.Exception.CONNECTION_LOSS);
  });
}

test('a connect reply cut short: no throw, the connection dropped', () => {
  const wire = fakeWire({ tuned: true, state: CONNECTING });
  for (const reply of [
    framed(),
    framed(int(0), int(30_000)),
    framed(int(0), int(30_000), long(1)),
    framed(int(0), int(30_000), long(1), int(16), Buffer.alloc(4)),
  ]) {
    assert.doesNotThrow(() => wire.receive(reply));
    assert.equal(wire.socket.destroyed, true);
    assert.equal(wire.manager.state, CONNECTING, 'not taken for connected');
    wire.replaceSocket();
  }
});

test('a SASL reply cut short: no throw, the connection dropped', async () => {
  const wire = fakeWire({ tuned: true, state: CONNECTING });
  useSasl(wire.client, { username: 'alice', password: 'secret' });
  const manager = wire.manager as unknown as { setState(s: number): void };
  manager.setState(CONNECTED);
  await nextTick();
  const xid = (wire.written()[0] as Buffer).readInt32BE(4);
  assert.doesNotThrow(() => wire.receive(framed(int(xid), long(0))));
  assert.equal(wire.socket.destroyed, true);
});
