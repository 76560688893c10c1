/**
 * Replies carrying error codes the wire client does not know, injected by a
 * proxy that rewrites one reply's error field: SessionClosedRequireAuth
 * (-124), QuotaExceeded (-125), Throttled (-127) and a later server's -999.
 * Each reaches the request it answers as a typed error carrying the code (a
 * create, a multi, a read, the requests and auth packet of the connect);
 * -124, or any error answering the auth packet, fails the session for good.
 * Before, the wire client threw "Unknown code" from its socket handler and
 * the process died: these tests also fail on any uncaught exception.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  AuthRequiredError,
  QuotaExceededError,
  Session,
  ThrottledError,
  type ZooKeeperError,
  ZooKeeperError as ZooKeeperErrorClass,
} from '@zkq/core';
import { sharedZooKeeper, uniqueRoot } from '@zkq/testing';
import { cleanups } from '../../helpers/cleanups.js';
import { FaultProxy, OP, request } from '../../helpers/fault-proxy.js';
import { nextEvent } from '../../helpers/zk.js';

const CASES: { code: number; type: new (...args: never[]) => ZooKeeperError; errorCode: string }[] = [
  { code: -124, type: AuthRequiredError, errorCode: 'ZK_AUTH_REQUIRED' },
  { code: -125, type: QuotaExceededError, errorCode: 'ZK_QUOTA_EXCEEDED' },
  { code: -127, type: ThrottledError, errorCode: 'ZK_THROTTLED' },
  { code: -999, type: ZooKeeperErrorClass, errorCode: 'ZK_ERROR' },
];

const uncaught: unknown[] = [];
const record = (err: unknown) => uncaught.push(err);
before(() => process.on('uncaughtException', record));
after(() => {
  process.off('uncaughtException', record);
  assert.deepEqual(uncaught, [], 'no exception escaped the wire layer');
});

function typed(expected: (typeof CASES)[number], path?: string) {
  return (err: unknown) => {
    assert.ok(err instanceof expected.type, `${expected.code}: ${String(err)}`);
    assert.equal((err as ZooKeeperError).zkCode, expected.code);
    assert.equal((err as ZooKeeperError).code, expected.errorCode);
    if (path) assert.equal((err as ZooKeeperError).path, path);
    return true;
  };
}

async function proxied(t: { after(fn: () => unknown): void; name: string }) {
  const defer = cleanups(t);
  const proxy = await FaultProxy.start(await sharedZooKeeper());
  defer(() => proxy.stop());
  const connect = async (options: { auth?: string } = {}) => {
    const session = await Session.connect({
      connectionString: proxy.connectionString,
      namespace: uniqueRoot(t.name),
      sessionTimeout: 4000,
      connectTimeout: 10_000,
      ...options,
    });
    defer(() => session.close());
    return session;
  };
  return { proxy, connect };
}

/** Resolves once `session` reported failing for good with the error of `code`, and is closed. */
async function failedForGood(session: Session, failed: Promise<[ZooKeeperError]>, expected: (typeof CASES)[number]) {
  const [error] = await failed;
  typed(expected)(error);
  if (session.state !== 'closed') await nextEvent(session, 'closed', 10_000);
  await assert.rejects(session.exists('/'), typed(expected, '/'), 'later requests get the same error');
}

for (const expected of CASES) {
  describe(`a reply with error ${expected.code}`, () => {
    test('a create gets it as its typed error', async (t) => {
      const { proxy, connect } = await proxied(t);
      const session = await connect();
      const failed = nextEvent<[ZooKeeperError]>(session, 'failed', 20_000);
      failed.catch(() => undefined);
      proxy.rewriteError(request(OP.create, '/made'), expected.code);
      await assert.rejects(session.create('/made', Buffer.from('x')), typed(expected, '/made'));
      if (expected.code === -124) await failedForGood(session, failed, expected);
      else assert.ok(await session.exists('/made'), 'the session goes on (the server did apply it)');
    });

    test('a multi gets it as its typed error', async (t) => {
      const { proxy, connect } = await proxied(t);
      const session = await connect();
      const failed = nextEvent<[ZooKeeperError]>(session, 'failed', 20_000);
      failed.catch(() => undefined);
      proxy.rewriteError(request(OP.multi, '/m1'), expected.code);
      await assert.rejects(
        session.multi([
          { op: 'create', path: '/m1' },
          { op: 'create', path: '/m2' },
        ]),
        typed(expected),
      );
      if (expected.code === -124) await failedForGood(session, failed, expected);
      else assert.ok(await session.exists('/m1'));
    });

    test('a read gets it as its typed error, a throttled read is retried', async (t) => {
      const { proxy, connect } = await proxied(t);
      const session = await connect();
      const failed = nextEvent<[ZooKeeperError]>(session, 'failed', 20_000);
      failed.catch(() => undefined);
      await session.create('/r', Buffer.from('v'));
      const fault = proxy.rewriteError(request(OP.getData, '/r'), expected.code);
      if (expected.code === -127) {
        assert.equal((await session.getData('/r')).data.toString(), 'v', 'sent again after the throttle');
        assert.ok(fault.hasFired);
        return;
      }
      await assert.rejects(session.getData('/r'), typed(expected, '/r'));
      if (expected.code === -124) await failedForGood(session, failed, expected);
      else assert.equal((await session.getData('/r')).data.toString(), 'v');
    });

    test('the connect: its first request, or its auth packet, fails Session.connect with it', async (t) => {
      const { proxy, connect } = await proxied(t);
      // the namespace node is created first thing after the handshake (retried when throttled)
      const fault = proxy.rewriteError(request([OP.create, OP.create2]), expected.code);
      if (expected.code === -127) await connect();
      else await assert.rejects(connect(), typed(expected));
      assert.ok(fault.hasFired);
      // an auth packet answered with an error: the server refused the connection's identity
      proxy.rewriteError(request(OP.auth), expected.code);
      await assert.rejects(connect({ auth: 'alice:secret' }), typed(expected));
    });
  });
}
