/**
 * A ZooKeeper that enforces SASL authentication (`enforce.auth.enabled`,
 * `enforce.auth.schemes=sasl`) answers a client that has not authenticated
 * with SessionClosedRequireAuth (-124), a code the wire client does not know,
 * and closes the connection. zkq fails with AuthRequiredError within the
 * connect timeout, and the process lives on (it used to die of an uncaught
 * "Unknown code: -124" thrown from the wire client's socket handler).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AuthRequiredError, Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { saslServerOptions, startZooKeeper, type ZooKeeperServer } from '@zkq/testing';

const CONNECT_TIMEOUT_MS = 10_000;
let server: ZooKeeperServer;
const uncaught: unknown[] = [];
const record = (err: unknown) => uncaught.push(err);

before(async () => {
  process.on('uncaughtException', record);
  server = await startZooKeeper({ heapMb: 128, ...saslServerOptions({ users: { alice: 'secret' } }) });
});
after(async () => {
  process.off('uncaughtException', record);
  await server?.stop();
  assert.deepEqual(uncaught, [], 'no exception escaped the wire layer');
});

const authRequired = (err: unknown) => {
  assert.ok(err instanceof AuthRequiredError, String(err));
  assert.equal(err.code, 'ZK_AUTH_REQUIRED');
  assert.equal(err.zkCode, -124);
  return true;
};

test('a session without credentials: Session.connect rejects with AuthRequiredError within the connect timeout', async () => {
  const started = Date.now();
  await assert.rejects(
    Session.connect({
      connectionString: server.connectionString,
      namespace: '/app',
      connectTimeout: CONNECT_TIMEOUT_MS,
    }),
    authRequired,
  );
  assert.ok(Date.now() - started < CONNECT_TIMEOUT_MS, 'before the connect timeout');
});

test('a session without a namespace connects, then its first request fails it for good', async () => {
  const session = await Session.connect({ connectionString: server.connectionString });
  const failed = new Promise((resolve) => session.once('failed', resolve));
  await assert.rejects(session.exists('/zookeeper'), authRequired);
  authRequired(await failed);
  await assert.rejects(session.getData('/'), authRequired);
  await session.close();
});

test('a Queue without credentials: add rejects with AuthRequiredError, the process lives on', async () => {
  const queue = new Queue('emails', {
    connection: { connectionString: server.connectionString, connectTimeout: CONNECT_TIMEOUT_MS },
  });
  const started = Date.now();
  await assert.rejects(queue.add('send', { to: 'a@example.com' }), authRequired);
  assert.ok(Date.now() - started < CONNECT_TIMEOUT_MS);
  await queue.close();
});
