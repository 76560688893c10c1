/**
 * The SASL exchange on node-zookeeper-client's connection, without a server:
 * on a new connection the SASL token goes first and every queued request
 * (auth, set-watches, the session's) waits until the server's proof came;
 * the replies of the exchange never reach the client's own reply handling.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import zookeeper from 'node-zookeeper-client';
import { digestResponse, parseDirectives } from '../../packages/core/src/zk/sasl.ts';
import { onConnectionRefused, useSasl } from '../../packages/core/src/zk/wire.ts';
import { fakeWire, framed, int, nextTick, replyHeader } from '../helpers/wire-bytes.ts';

const CONNECTED = 2;
const opOf = (packet: Buffer) => packet.readInt32BE(8);

test('useSasl needs the request pipe', () => {
  const plain = zookeeper.createClient('127.0.0.1:1', { retries: 0 });
  assert.deepEqual(useSasl(plain, { username: 'a', password: 'b' }), ['the request pipe is not installed']);
});

test('the exchange goes first; requests wait for the server proof, then go in order', async () => {
  const wire = fakeWire({ tuned: true, state: 1 });
  assert.deepEqual(useSasl(wire.client, { username: 'alice', password: 'secret' }), []);
  const refused: number[] = [];
  onConnectionRefused(wire.client, (code) => refused.push(code));
  const got: unknown[] = [];
  wire.client.getData('/a', (err: unknown) => got.push(err));
  const manager = wire.manager as unknown as { setState(s: number): void; onPacketQueueReadable(): void };
  manager.setState(CONNECTED);
  manager.onPacketQueueReadable();
  await nextTick();
  const first = wire.written();
  assert.equal(first.length, 1, 'only the SASL token');
  assert.equal(opOf(first[0] as Buffer), 102);
  const xid = (first[0] as Buffer).readInt32BE(4);

  const challenge = 'realm="zk-sasl-md5",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess';
  wire.receive(framed(replyHeader(xid), int(challenge.length), Buffer.from(challenge)));
  await nextTick();
  const second = wire.written()[1] as Buffer;
  assert.equal(opOf(second), 102);
  assert.equal(wire.written().length, 2, 'the request still waits');
  const response = parseDirectives(second.subarray(16).toString());
  const p = {
    username: 'alice',
    password: 'secret',
    realm: 'zk-sasl-md5',
    nonce: 'abc',
    cnonce: response.get('cnonce') as string,
    nc: '00000001',
    digestUri: 'zookeeper/zk-sasl-md5',
    utf8: true,
  };
  const proof = `rspauth=${digestResponse(p, '')}`;
  wire.receive(framed(replyHeader(second.readInt32BE(4)), int(proof.length), Buffer.from(proof)));
  await nextTick();
  await nextTick();
  const sent = wire.written();
  assert.equal(sent.length, 3);
  assert.equal(opOf(sent[2] as Buffer), 4, 'then the getData');
  assert.deepEqual(refused, []);
  assert.equal(wire.socket.destroyed, false);
});

test('a refused exchange (an error reply, or a proof that does not match) is reported, the requests still held', async () => {
  for (const reply of ['error', 'bad proof'] as const) {
    const wire = fakeWire({ tuned: true, state: 1 });
    useSasl(wire.client, { username: 'alice', password: 'secret' });
    const refused: number[] = [];
    onConnectionRefused(wire.client, (code) => refused.push(code));
    wire.client.getData('/a', () => undefined);
    const manager = wire.manager as unknown as { setState(s: number): void };
    manager.setState(CONNECTED);
    await nextTick();
    let xid = (wire.written()[0] as Buffer).readInt32BE(4);
    if (reply === 'error') wire.receive(framed(replyHeader(xid, -115), int(-1)));
    else {
      const challenge = 'realm="zk-sasl-md5",nonce="abc",qop="auth"';
      wire.receive(framed(replyHeader(xid), int(challenge.length), Buffer.from(challenge)));
      await nextTick();
      xid = (wire.written()[1] as Buffer).readInt32BE(4);
      const proof = 'rspauth=00000000000000000000000000000000';
      wire.receive(framed(replyHeader(xid), int(proof.length), Buffer.from(proof)));
    }
    await nextTick();
    assert.deepEqual(refused, [-115], reply);
    assert.ok(
      wire.written().every((b) => opOf(b) === 102),
      `${reply}: no request went out`,
    );
  }
});
