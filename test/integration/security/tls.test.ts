/**
 * TLS to ZooKeeper's secure client port (a TLS-only server, Netty, client
 * certificates required): a session connects, works, and reconnects over TLS
 * when the server restarts. Each security failure (a CA that did not sign
 * the server's certificate, an expired client certificate, none at all, a
 * server name the certificate does not carry) fails Session.connect fast with
 * ConnectionSecurityError, never a hang or a reconnect loop; bad options are
 * refused at the entry.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, test } from 'node:test';
import { BadArgumentsError, ConnectionSecurityError, ConnectTimeoutError, Session, type TlsOptions } from '@zkq/core';
import {
  makeTestCertificates,
  pem,
  sharedZooKeeper,
  startZooKeeper,
  type TestCertificates,
  type ZooKeeperServer,
} from '@zkq/testing';
import { nextEvent } from '../../helpers/zk.js';

const CONNECT_TIMEOUT_MS = 15_000;
let certs: TestCertificates;
let server: ZooKeeperServer;

before(async () => {
  certs = makeTestCertificates();
  server = await startZooKeeper({ heapMb: 128, tls: { certificates: certs, clientAuth: 'need' } });
});
after(() => server?.stop());

const valid = (): TlsOptions => ({ ca: pem(certs.ca), cert: pem(certs.client.cert), key: pem(certs.client.key) });

function connect(tls: TlsOptions, namespace = '/tls') {
  return Session.connect({
    connectionString: server.connectionString,
    namespace,
    sessionTimeout: 6000,
    connectTimeout: CONNECT_TIMEOUT_MS,
    tls,
  });
}

test('a session over TLS works, and reconnects over TLS when the server restarts', async (t) => {
  const session = await connect(valid(), '/tls-works');
  t.after(() => session.close());
  await session.create('/a', Buffer.from('over tls'));
  assert.equal((await session.getData('/a')).data.toString(), 'over tls');
  const reconnected = nextEvent<[{ newSession: boolean }]>(session, 'reconnected', 60_000);
  await server.process.restart();
  await reconnected;
  assert.equal((await session.getData('/a')).data.toString(), 'over tls', 'read on the new TLS connection');
  await session.setData('/a', Buffer.from('again'));
});

for (const [what, tls, reasons] of [
  [
    'a CA that did not sign the server certificate',
    () => ({ ...valid(), ca: pem(certs.otherCa) }),
    /CERT|VERIFY|SELF_SIGNED/,
  ],
  [
    'an expired client certificate',
    () => ({ ca: pem(certs.ca), cert: pem(certs.expiredClient.cert), key: pem(certs.expiredClient.key) }),
    /ERR_SSL_/,
  ],
  ['no client certificate', () => ({ ca: pem(certs.ca) }), /ERR_SSL_/],
  ['a server name the certificate does not carry', () => ({ ...valid(), servername: 'zk.example.org' }), /ALTNAME/],
] as const) {
  test(`${what}: Session.connect fails fast with ConnectionSecurityError`, async () => {
    const started = Date.now();
    await assert.rejects(connect(tls()), (err: unknown) => {
      assert.ok(err instanceof ConnectionSecurityError, String(err));
      assert.equal(err.code, 'ZK_CONNECTION_SECURITY');
      assert.match(err.reason, reasons);
      return true;
    });
    assert.ok(Date.now() - started < CONNECT_TIMEOUT_MS, 'well before the connect timeout');
  });
}

test('bad TLS options are refused before connecting', async () => {
  for (const tls of [
    'yes',
    { ca: 42 },
    { ca: [] },
    { cert: pem(certs.client.cert) },
    { ca: 'not a certificate' },
    { cert: pem(certs.client.cert), key: pem(certs.expiredClient.key) },
    { servername: '' },
    { rejectUnauthorized: 'no' },
    { verify: true },
  ]) {
    await assert.rejects(connect(tls as TlsOptions), BadArgumentsError, JSON.stringify(tls).slice(0, 60));
  }
});

test('TLS asked of a plaintext ZooKeeper, or of a server closing in the middle of the handshake: a typed error, never a plaintext session', async (t) => {
  const closing = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => socket.destroy()); // the client hello read, then gone
  });
  await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => closing.close(() => resolve())));
  const closingAt = `127.0.0.1:${(closing.address() as { port: number }).port}`;
  for (const connectionString of [await sharedZooKeeper(), closingAt]) {
    const outcome = await Session.connect({
      connectionString,
      namespace: '/tls-plain',
      sessionTimeout: 6000,
      connectTimeout: 3000,
      tls: valid(),
    }).then(
      async (session) => {
        await session.close({ timeout: 0 });
        return 'connected in the clear';
      },
      (err: unknown) => err,
    );
    assert.ok(outcome instanceof ConnectionSecurityError || outcome instanceof ConnectTimeoutError, String(outcome));
  }
});
