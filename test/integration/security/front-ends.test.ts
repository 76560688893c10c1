/**
 * Every front-end against hardened ZooKeepers: a TLS-only server (secure
 * client port, no plain one), a TLS server requiring client certificates
 * (nodes under an x509 ACL), and a server enforcing SASL (DIGEST-MD5 users
 * in a JAAS file). On each, zkq's Queue and Worker process a job, a lock is
 * taken and given back, and a job goes through BullMQ's Queue and Worker on
 * the ZooKeeper backend: the connection's `tls` and `sasl` reach them all.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type ConnectionOptions, Lock, Session, x509Acl } from '@zkq/core';
import { Queue } from '@zkq/producer';
import {
  makeTestCertificates,
  saslServerOptions,
  startZooKeeper,
  type TestCertificates,
  uniqueRoot,
  type ZooKeeperServer,
  type ZooKeeperServerOptions,
} from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { clientTls } from '../../helpers/secure-zookeeper.js';
import { waitFor } from '../../helpers/zk.js';

const Bull = withBackend(createZooKeeperBackend);

interface Hardening {
  name: string;
  server: (certs: TestCertificates) => ZooKeeperServerOptions;
  connection: (certs: TestCertificates) => Omit<ConnectionOptions, 'connectionString'>;
}

const HARDENINGS: Hardening[] = [
  {
    name: 'TLS only',
    server: (certificates) => ({ tls: { certificates, clientAuth: 'none' } }),
    connection: (certs) => ({ tls: clientTls(certs, false) }),
  },
  {
    name: 'TLS with client certificates and x509 ACLs',
    server: (certificates) => ({ tls: { certificates, clientAuth: 'need' } }),
    connection: (certs) => ({
      tls: clientTls(certs, true),
      acl: x509Acl(certs.client.subject),
    }),
  },
  {
    name: 'SASL enforced',
    server: () => saslServerOptions({ users: { worker: 'w0rker' } }),
    connection: () => ({ sasl: { username: 'worker', password: 'w0rker' } }),
  },
];

let certs: TestCertificates;
before(() => {
  certs = makeTestCertificates();
});

for (const hardening of HARDENINGS) {
  describe(hardening.name, () => {
    let server: ZooKeeperServer;
    let connection: ConnectionOptions;
    before(async () => {
      server = await startZooKeeper({ heapMb: 128, ...hardening.server(certs) });
      connection = { connectionString: server.connectionString, sessionTimeout: 6000, ...hardening.connection(certs) };
    });
    after(() => server?.stop());

    test('a job added with a Queue is processed by a Worker', async (t) => {
      const prefix = uniqueRoot('secure').slice(1);
      const queue = new Queue('mail', { connection, prefix });
      t.after(() => queue.close());
      const worker = new Worker('mail', async (job) => `sent to ${job.data.to}`, { connection, prefix });
      t.after(() => worker.close());
      const job = await queue.add('send', { to: 'a@example.com' });
      await waitFor(async () => (await queue.getJob(job.id))?.returnvalue === 'sent to a@example.com', {
        what: 'the job completed',
      });
    });

    test('a lock is taken and given back', async (t) => {
      const session = await Session.connect({ ...connection, namespace: uniqueRoot('secure-lock') });
      t.after(() => session.close());
      const lock = new Lock(session, '/resource');
      await lock.acquire({ timeout: 10_000 });
      assert.equal(lock.isHeld, true);
      await lock.release();
      assert.equal(lock.isHeld, false);
    });

    test("a job goes through BullMQ's Queue and Worker on the ZooKeeper backend", async (t) => {
      const bullConnection = { ...connection, namespace: uniqueRoot('secure-bull').slice(1) };
      const queue = new Bull.Queue('reports', { connection: bullConnection });
      t.after(() => queue.close());
      const worker = new Bull.Worker('reports', async (job) => job.data.n * 2, { connection: bullConnection });
      t.after(() => worker.close());
      const job = await queue.add('double', { n: 21 });
      await waitFor(async () => (await queue.getJob(job.id as string))?.returnvalue === 42, {
        what: 'the BullMQ job completed',
      });
    });
  });
}
