/**
 * SASL DIGEST-MD5 against a ZooKeeper that enforces it (`enforce.auth.enabled`,
 * `enforce.auth.schemes=sasl`, users in a JAAS DigestLoginModule): a session
 * with the credentials is accepted, its nodes carry `sasl` ACLs, and it
 * authenticates again, before any other request, after every reconnection.
 * A wrong password is refused fast with AuthRequiredError (the server's
 * answer to a failed SASL exchange when it enforces SASL), never a hang.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AuthFailedError, AuthRequiredError, NoAuthError, Session, type SessionOptions, saslAcl } from '@zkq/core';
import { saslServerOptions, startZooKeeper, TcpProxy, uniqueRoot, type ZooKeeperServer } from '@zkq/testing';
import { nextEvent } from '../../helpers/zk.js';

const CONNECT_TIMEOUT_MS = 15_000;
let server: ZooKeeperServer;

before(async () => {
  server = await startZooKeeper({ heapMb: 128, ...saslServerOptions({ users: { alice: 'secret', bob: 'b0b' } }) });
});
after(() => server?.stop());

async function open(t: { after(fn: () => unknown): void }, options: Partial<SessionOptions>) {
  const session = await Session.connect({
    connectionString: server.connectionString,
    sessionTimeout: 6000,
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...options,
  });
  t.after(() => session.close());
  return session;
}

test('with the credentials: accepted, nodes creator-only (sasl:alice), re-authenticated after a reconnection', async (t) => {
  const namespace = uniqueRoot('sasl');
  const alice = await open(t, { namespace, sasl: { username: 'alice', password: 'secret' } });
  await alice.create('/mine', Buffer.from('alice'));
  assert.equal((await alice.getData('/mine')).data.toString(), 'alice');

  const bob = await open(t, { sasl: { username: 'bob', password: 'b0b' } });
  await assert.rejects(bob.getData(`${namespace}/mine`), NoAuthError, 'the creator ACL is sasl:alice');

  const reconnected = nextEvent(alice, 'reconnected', 60_000);
  await server.process.restart();
  await reconnected;
  // the first requests after the reconnection: a server enforcing SASL would close the connection on them
  await Promise.all([alice.setData('/mine', Buffer.from('again')), alice.getChildren('/')]);
  assert.equal((await alice.getData('/mine')).data.toString(), 'again');
});

test('an explicit sasl ACL lets the named user in', async (t) => {
  const namespace = uniqueRoot('sasl-acl');
  const alice = await open(t, {
    namespace,
    sasl: { username: 'alice', password: 'secret' },
    acl: [...saslAcl('alice'), ...saslAcl('bob', 'r')],
  });
  await alice.create('/shared', Buffer.from('hi bob'));
  const bob = await open(t, { sasl: { username: 'bob', password: 'b0b' } });
  assert.equal((await bob.getData(`${namespace}/shared`)).data.toString(), 'hi bob');
  await assert.rejects(bob.setData(`${namespace}/shared`, Buffer.from('x')), NoAuthError);
});

for (const [what, sasl] of [
  ['a wrong password', { username: 'alice', password: 'wrong' }],
  ['an unknown user', { username: 'mallory', password: 'guess' }],
] as const) {
  test(`${what}: Session.connect fails fast with AuthRequiredError`, async () => {
    const started = Date.now();
    const connected: Session[] = [];
    const connecting = open({ after() {} }, { namespace: uniqueRoot('sasl-refused'), sasl }).then((session) => {
      connected.push(session);
      return session.close();
    });
    await assert.rejects(connecting, (err: unknown) => {
      assert.ok(err instanceof AuthRequiredError, String(err));
      return true;
    });
    assert.ok(Date.now() - started < CONNECT_TIMEOUT_MS);
  });
}

test('a server that takes SASL without enforcing it refuses a wrong password with AuthFailedError', async (t) => {
  const lenient = await startZooKeeper({
    heapMb: 128,
    ...saslServerOptions({ users: { alice: 'secret' }, enforce: false }),
  });
  t.after(() => lenient.stop());
  await assert.rejects(
    Session.connect({
      connectionString: lenient.connectionString,
      namespace: '/lenient',
      connectTimeout: CONNECT_TIMEOUT_MS,
      sasl: { username: 'alice', password: 'wrong' },
    }),
    AuthFailedError,
  );
  const anonymous = await Session.connect({ connectionString: lenient.connectionString, namespace: '/lenient' });
  t.after(() => anonymous.close());
  assert.ok(await anonymous.exists('/'), 'without enforcement, a connection without SASL is served');
});

test('connections cut mid-packet each way while requests are in flight: every reconnection authenticates before the requests it holds, the session never refused', async (t) => {
  const proxy = await TcpProxy.start(server.connectionString);
  t.after(() => proxy.stop());
  const alice = await open(t, {
    connectionString: proxy.connectionString,
    namespace: uniqueRoot('sasl-cuts'),
    sasl: { username: 'alice', password: 'secret' },
  });
  const failures: unknown[] = [];
  alice.on('failed', (err) => failures.push(err));
  await alice.create('/n', Buffer.from('0'));
  for (const [round, [way, keep]] of (
    [
      ['up', 3],
      ['down', 3],
      ['up', 20],
      ['down', 30],
      ['down', 2],
    ] as const
  ).entries()) {
    const cut = proxy.cutMidway(way, keep);
    const burst = Array.from({ length: 8 }, (_, i) =>
      alice.setData('/n', Buffer.from(`${round}.${i}`)).then(
        () => undefined,
        (err: unknown) => err,
      ),
    );
    await cut;
    // the requests of the next connection, sent while it authenticates, wait for the exchange
    burst.push(alice.getChildren('/').then(() => undefined));
    for (const err of await Promise.all(burst)) {
      assert.ok(!(err instanceof AuthRequiredError) && !(err instanceof AuthFailedError), String(err));
    }
  }
  assert.deepEqual(failures, []);
  await alice.setData('/n', Buffer.from('end'));
  assert.equal((await alice.getData('/n')).data.toString(), 'end');
});
