/**
 * A ZooKeeper on TLS of its own for one test file: fresh certificates, a
 * secure client port that asks for a client certificate (its subject is the
 * session's x509 identity) and takes sessions without one; more server
 * options (SASL) on request.
 */
import { after, before } from 'node:test';
import type { TlsOptions } from '@zkq/core';
import {
  makeTestCertificates,
  pem,
  startZooKeeper,
  type TestCertificates,
  type ZooKeeperServer,
  type ZooKeeperServerOptions,
} from '@zkq/testing';

export interface SecureZooKeeper {
  /** The certificates (CA, server, client), made before the file's tests. */
  readonly certs: TestCertificates;
  /** The server, started before the file's tests and stopped after them. */
  readonly server: ZooKeeperServer;
}

/** Starts the file's TLS ZooKeeper, with a client certificate of subject `clientSubject`. */
export function secureZooKeeperForFile(
  clientSubject: string,
  more: Partial<ZooKeeperServerOptions> = {},
): SecureZooKeeper {
  const secure = {} as { certs: TestCertificates; server: ZooKeeperServer };
  before(async () => {
    secure.certs = makeTestCertificates({ clientSubject });
    secure.server = await startZooKeeper({
      heapMb: 128,
      tls: { certificates: secure.certs, clientAuth: 'want' },
      ...more,
    });
  });
  after(() => secure.server?.stop());
  return secure;
}

/** A client's TLS options trusting `certs`' CA, with the client certificate when `withCert`. */
export function clientTls(certs: TestCertificates, withCert: boolean): TlsOptions {
  return {
    ca: pem(certs.ca),
    ...(withCert ? { cert: pem(certs.client.cert), key: pem(certs.client.key) } : {}),
  };
}
