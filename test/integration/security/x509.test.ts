/**
 * Certificate identities: over TLS to a server with ZooKeeper's
 * X509AuthenticationProvider, a client certificate's subject is the
 * session's `x509` identity. Nodes created with an `x509` ACL (x509Acl, or
 * the creator ACL on a connection with a certificate) are readable by that
 * certificate only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoAuthError, Session, type SessionOptions, x509Acl } from '@zkq/core';
import { uniqueRoot } from '@zkq/testing';
import { clientTls, secureZooKeeperForFile } from '../../helpers/secure-zookeeper.js';

const zk = secureZooKeeperForFile('/O=tenant-a/CN=zkq-worker');

async function open(t: { after(fn: () => unknown): void }, options: Partial<SessionOptions> & { withCert: boolean }) {
  const { withCert, ...rest } = options;
  const session = await Session.connect({
    connectionString: zk.server.connectionString,
    tls: clientTls(zk.certs, withCert),
    ...rest,
  });
  t.after(() => session.close());
  return session;
}

test("the certificate's subject, RFC 2253 order, is the identity an x509 ACL names", () => {
  assert.equal(zk.certs.client.subject, 'CN=zkq-worker,O=tenant-a');
});

for (const [what, acl] of [
  ['an x509 ACL naming the subject', () => x509Acl(zk.certs.client.subject)],
  ["the creator ACL on a certificate's connection", () => 'creator' as const],
] as const) {
  test(`${what}: the certificate may use the nodes, a connection without it may not`, async (t) => {
    const namespace = uniqueRoot('x509');
    const owner = await open(t, { withCert: true, namespace, acl: acl() });
    await owner.create('/secret', Buffer.from('tenant a'));
    const again = await open(t, { withCert: true, namespace: `${namespace}/secret` });
    assert.equal((await again.getData('/')).data.toString(), 'tenant a', 'another session with the certificate');
    const stranger = await open(t, { withCert: false });
    await assert.rejects(stranger.getData(`${namespace}/secret`), NoAuthError);
    await assert.rejects(stranger.create(`${namespace}/intruder`), NoAuthError);
  });
}
