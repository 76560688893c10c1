/**
 * Tenants on one secured ZooKeeper: each tenant's namespace (its prefix) is
 * created under the creator ACL of its identity, a client certificate (x509),
 * a SASL user or a digest user, so the namespace node and every node below it
 * are that identity's alone. Another tenant, with an identity of another
 * scheme, can neither read the jobs, add to the queues, list the queues nor
 * delete anything of the first; what it still sees is the namespace's name
 * in a listing of its parent (ZooKeeper's ACLs are per node, not inherited),
 * whether a path exists (exists checks no ACL), and it may delete a namespace
 * node still empty under an open parent (the parent's ACL rules a delete).
 * The owner works normally throughout.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ConnectionOptions, NoAuthError, Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { saslServerOptions, uniqueRoot } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { clientTls, secureZooKeeperForFile } from '../../helpers/secure-zookeeper.js';
import { waitFor } from '../../helpers/zk.js';

// One server knows all three schemes: TLS with optional client certificates
// and the x509 provider, SASL taken but not enforced, digest as always.
const zk = secureZooKeeperForFile(
  '/O=tenant-x509/CN=zkq-worker',
  saslServerOptions({ users: { tenantsasl: 'sasl-pw' }, enforce: false }),
);

type Scheme = 'x509' | 'sasl' | 'digest';

/** The connection of a tenant known by `scheme`; every tenant's nodes get its creator ACL. */
function identity(scheme: Scheme): ConnectionOptions {
  const base = { connectionString: zk.server.connectionString, sessionTimeout: 6000, acl: 'creator' as const };
  const tls = clientTls(zk.certs, scheme === 'x509');
  if (scheme === 'sasl') return { ...base, tls, sasl: { username: 'tenantsasl', password: 'sasl-pw' } };
  if (scheme === 'digest') return { ...base, tls, auth: 'tenantdigest:digest-pw' };
  return { ...base, tls };
}

for (const [owner, other] of [
  ['x509', 'sasl'],
  ['sasl', 'digest'],
  ['digest', 'x509'],
] as const) {
  test(`a ${owner} tenant's namespace: a ${other} tenant cannot list, read, add to or delete it; the owner works normally`, async (t) => {
    const parent = uniqueRoot(`tenants-${owner}`);
    const prefix = `${parent.slice(1)}/tenant-a`;
    const a = identity(owner);
    const b = identity(other);

    const queue = new Queue('mail', { connection: a, prefix });
    t.after(() => queue.close());
    const job = await queue.add('send', { to: 'a@example.com' });

    // the other tenant connects at its own namespace beside the first, under the same parent
    const neighbour = new Queue('mail', { connection: b, prefix: `${parent.slice(1)}/tenant-b` });
    t.after(() => neighbour.close());
    await neighbour.add('own', { n: 1 });

    const stranger = await Session.connect(b);
    t.after(() => stranger.close());
    const ns = `/${prefix}`;
    assert.deepEqual((await stranger.getChildren(parent)).sort(), ['tenant-a', 'tenant-b'], "the parent's listing");
    await assert.rejects(stranger.getChildren(ns), NoAuthError, 'list the queues');
    await assert.rejects(stranger.getData(ns), NoAuthError, 'read the namespace node');
    await assert.rejects(stranger.getChildren(`${ns}/mail/jobs`), NoAuthError, 'list the jobs');
    await assert.rejects(stranger.create(`${ns}/intruder`), NoAuthError, 'create a queue');
    await assert.rejects(stranger.create(`${ns}/mail/ready/intruder`), NoAuthError, 'add to a queue');
    await assert.rejects(stranger.delete(`${ns}/mail/meta`), NoAuthError, "delete a queue's node");
    await assert.rejects(stranger.deleteRecursive(ns), NoAuthError, 'delete the namespace');
    await assert.rejects(stranger.setData(ns, Buffer.from('x')), NoAuthError, 'write the namespace node');
    // what the ACLs cannot hide: exists needs no permission, and an empty namespace under an open parent can go
    assert.ok(await stranger.exists(`${ns}/mail`), "exists answers on the owner's queue");
    const empty = await Session.connect({ ...a, namespace: `${parent}/tenant-c` });
    await empty.close();
    await stranger.delete(`${parent}/tenant-c`);

    // the front-ends refuse alike, with the typed error
    const intruder = new Queue('mail', { connection: b, prefix });
    t.after(() => intruder.close());
    await assert.rejects(intruder.getJob(job.id), NoAuthError, "read the owner's job");
    await assert.rejects(intruder.add('spam', {}), NoAuthError, "add to the owner's queue");
    await assert.rejects(intruder.remove(job.id), NoAuthError, "remove the owner's job");

    // the owner's queue is whole and works
    const worker = new Worker('mail', async (j) => `sent to ${j.data.to}`, { connection: a, prefix });
    t.after(() => worker.close());
    await waitFor(async () => (await queue.getJob(job.id))?.returnvalue === 'sent to a@example.com', {
      what: "the owner's job completed",
      timeoutMs: 30_000,
    });
    const jobs = await queue.getJobs(['completed', 'waiting', 'active', 'failed', 'delayed']);
    assert.deepEqual(
      jobs.map((j) => j.name),
      ['send'],
      'nothing of the other tenant landed in it',
    );
  });
}
