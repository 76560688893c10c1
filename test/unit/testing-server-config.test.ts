/**
 * @zkq/testing's zoo.cfg and JVM settings without starting a server: extra
 * settings override the harness's own or drop them, and a TLS server has a
 * secure client port and no plain one.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { saslServerOptions, type TestCertificates, ZooKeeperProcess } from '@zkq/testing';

function zooCfg(t: { after(fn: () => unknown): void }, options: ConstructorParameters<typeof ZooKeeperProcess>[1]) {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-cfg-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const proc = new ZooKeeperProcess({ dir, clientPort: 2999, securePort: 3999 } as never, options, 'cp.jar');
  return { proc, lines: readFileSync(join(dir, 'zoo.cfg'), 'utf8').trim().split('\n') };
}

test('config: extra settings are appended, override the harness defaults, and null drops one', (t) => {
  const { lines } = zooCfg(t, {
    config: { 'enforce.auth.enabled': true, maxClientCnxns: 10, '4lw.commands.whitelist': null },
  });
  assert.ok(lines.includes('enforce.auth.enabled=true'));
  assert.deepEqual(
    lines.filter((l) => l.startsWith('maxClientCnxns=')),
    ['maxClientCnxns=10'],
  );
  assert.equal(
    lines.some((l) => l.startsWith('4lw.commands.whitelist=')),
    false,
  );
});

test('saslServerOptions: the SASL provider, enforcement and a JAAS file holding the users', (t) => {
  const sasl = saslServerOptions({ users: { alice: 'se"cret' } });
  const { lines } = zooCfg(t, sasl);
  assert.ok(lines.includes('authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider'));
  assert.ok(lines.includes('enforce.auth.schemes=sasl'));
  const jaas = (sasl.jvmFlags?.[0] ?? '').replace('-Djava.security.auth.login.config=', '');
  assert.match(readFileSync(jaas, 'utf8'), /DigestLoginModule required\n\s+user_alice="se\\"cret";/);
});

test('tls: a secure client port on loopback, no plain port, the x509 provider; connectionString is the TLS port', (t) => {
  const certificates = { keyStore: 'k.p12', trustStore: 't.p12', password: 'pw' } as TestCertificates;
  const { proc, lines } = zooCfg(t, { tls: { certificates, clientAuth: 'need' } });
  assert.ok(lines.includes('secureClientPort=3999'));
  assert.ok(lines.includes('ssl.clientAuth=need'));
  assert.ok(lines.includes('serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory'));
  assert.equal(
    lines.some((l) => l.startsWith('clientPort')),
    false,
  );
  assert.equal(proc.connectionString, '127.0.0.1:3999');
});
