/**
 * TLS on node-zookeeper-client, without a server: the guard that pins the
 * connection manager's `connect` (which useTls re-implements with
 * tls.connect), which TLS errors end a session for good, and the options
 * check at the entries (Session.connect, every queue front-end).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidArgumentError } from '@zkq/core';
import { tlsOptionsProblem, validateConnection } from '@zkq/core/internal';
import zookeeper from 'node-zookeeper-client';
import { isSecurityFailure, tlsProblems, useTls } from '../../packages/core/src/zk/wire.ts';

describe('TLS on the wire client', () => {
  test('the guard finds the connect useTls re-implements, and names what differs in another copy', () => {
    assert.deepEqual(tlsProblems(), []);
    const problems = tlsProblems({ prototype: { connect() {} } });
    assert.ok(
      problems.includes('ConnectionManager.prototype.connect no longer does `self.socket = net.connect(server);`'),
    );
    assert.ok(problems.includes('ConnectionManager.prototype.findNextServer is missing'));
  });

  test('useTls gives the client its own connect, and only that client', () => {
    const client = zookeeper.createClient('127.0.0.1:1', { retries: 0 });
    const plain = zookeeper.createClient('127.0.0.1:1', { retries: 0 });
    assert.deepEqual(useTls(client, {}), []);
    const manager = (c: zookeeper.Client) => (c as unknown as { connectionManager: object }).connectionManager;
    assert.ok(Object.hasOwn(manager(client), 'connect'));
    assert.equal(Object.hasOwn(manager(plain), 'connect'), false);
  });

  test('certificate and handshake refusals end a session; network errors are retried', () => {
    for (const code of [
      'CERT_HAS_EXPIRED',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
    ]) {
      assert.equal(isSecurityFailure(Object.assign(new Error(code), { code })), true, code);
    }
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ERR_TLS_HANDSHAKE_TIMEOUT', undefined]) {
      assert.equal(isSecurityFailure(Object.assign(new Error('x'), { code })), false, String(code));
    }
  });

  test('a queue connection with bad TLS options is refused with InvalidArgumentError naming the option', () => {
    const cases: [unknown, string][] = [
      [true, 'connection.tls'],
      [{ ca: 'nope' }, 'connection.tls.ca'],
      [{ key: '-----BEGIN PRIVATE KEY-----' }, 'connection.tls.cert'],
      [{ servername: 5 }, 'connection.tls.servername'],
      [{ insecure: true }, 'connection.tls.insecure'],
    ];
    for (const [tls, argument] of cases) {
      assert.throws(
        () => validateConnection({ connectionString: '127.0.0.1:2181', tls }),
        (err: unknown) => err instanceof InvalidArgumentError && err.argument === argument,
        JSON.stringify(tls),
      );
    }
    assert.equal(tlsOptionsProblem({ rejectUnauthorized: false }), undefined);
  });
});
