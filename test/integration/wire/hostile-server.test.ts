/**
 * A "server" that answers with what no ZooKeeper sends: garbage, a frame cut
 * short, a length prefix far beyond what follows, a connect reply too short,
 * a valid handshake then replies that do not parse or answer nobody. Nothing
 * is thrown from the wire layer (the test runner fails on an uncaught
 * exception), and `Session.connect` settles within its connect timeout plus
 * its requests' deadlines: it rejects with a typed error.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { Session, ZkqError } from '@zkq/core';

const int = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const framed = (body: Buffer) => Buffer.concat([int(body.length), body]);
/** A connect reply: protocol version, timeout, session id, a 16-byte password. */
const connectReply = framed(Buffer.concat([int(0), int(10_000), Buffer.alloc(8, 7), int(16), Buffer.alloc(16, 1)]));
/** The xid of a request (after its length prefix), or undefined for a chunk too short. */
const xidOf = (chunk: Buffer) => (chunk.length >= 8 ? chunk.readInt32BE(4) : undefined);

type Answer = (socket: Socket, chunk: Buffer, index: number) => void;

const ANSWERS: [name: string, answer: Answer][] = [
  ['garbage bytes', (s) => s.write(Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'))],
  ['a frame cut short, then a close', (s) => s.end(Buffer.concat([int(40), Buffer.alloc(10)]))],
  ['a huge length prefix', (s) => s.write(Buffer.concat([int(0x7fff_fff0), Buffer.alloc(64)]))],
  ['a connect reply too short', (s) => s.write(framed(Buffer.concat([int(0), int(10_000)])))],
  [
    'a connect reply whose password runs past its end, then silence',
    (s, _chunk, i) => i === 0 && s.write(framed(Buffer.concat([int(0), int(10_000), Buffer.alloc(8), int(4096)]))),
  ],
  [
    'a handshake, then replies that do not parse',
    (s, chunk, i) => s.write(i === 0 ? connectReply : Buffer.concat([int(6), int(xidOf(chunk) ?? 1), Buffer.alloc(2)])),
  ],
  [
    'a handshake, then replies to an xid nobody sent',
    (s, _chunk, i) => s.write(i === 0 ? connectReply : framed(Buffer.concat([int(4242), Buffer.alloc(8), int(0)]))),
  ],
];

async function hostile(answer: Answer): Promise<{ server: Server; address: string }> {
  const server = createServer((socket) => {
    let index = 0;
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      if (!socket.destroyed && socket.writable) answer(socket, chunk, index++);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { server, address: `127.0.0.1:${port}` };
}

for (const [name, answer] of ANSWERS) {
  test(`a server answering with ${name}: Session.connect rejects with a typed error, nothing thrown`, async (t) => {
    const { server, address } = await hostile(answer);
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const outcome = await Session.connect({
      connectionString: address,
      connectTimeout: 2000,
      requestTimeout: 1000,
      sessionTimeout: 6000,
      namespace: '/hostile',
      retry: { maxAttempts: 2 },
    }).then(
      async (session) => {
        await session.close({ timeout: 0 });
        return 'connected';
      },
      (err: unknown) => err,
    );
    assert.ok(outcome instanceof ZkqError, `a typed error, not ${String(outcome)}`);
  });
}
