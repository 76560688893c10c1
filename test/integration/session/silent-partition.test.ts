/**
 * A link that dies silently (no byte and no close gets through either way,
 * as with a pulled cable): the session must report `suspended` before the
 * server can expire it, whatever its request timeout, so that a holder of
 * anything ephemeral hears of it before another can take its place.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { cleanups } from '../../helpers/cleanups.js';
import { eventAt, goneAt, PARTITION_SESSION_TIMEOUTS, sessionBehindProxy, Timeline } from '../../helpers/partition.js';
import { nextEvent, testSession } from '../../helpers/zk.js';

test('silent partition: suspended comes before the server expires the session, then lost, then a new session', async (t) => {
  const defer = cleanups(t);
  await Promise.all(
    PARTITION_SESSION_TIMEOUTS.map(async (sessionTimeout) => {
      // a request timeout far past the session timeout: the heartbeat alone must notice
      const { proxy, session } = await sessionBehindProxy(t, defer, { sessionTimeout, requestTimeout: 120_000 });
      assert.equal(session.sessionTimeout, sessionTimeout);
      const observer = await testSession(t, { namespace: session.namespace });
      await session.create('/eph', undefined, 'ephemeral');
      const times = new Timeline();
      const suspended = eventAt(session, 'suspended');
      const lost = eventAt(session, 'lost');
      const gone = goneAt(observer, '/eph');
      times.mark('partition');
      proxy.partition();
      times.mark('suspended', await suspended);
      times.mark('expired on the server', await gone);
      times.mark('lost', await lost);
      const label = `session of ${sessionTimeout} ms: ${times}`;
      t.diagnostic(label);
      assert.ok(times.of('suspended') < times.of('expired on the server'), label);
      const reconnected = nextEvent<[{ newSession: boolean }]>(session, 'reconnected', 30_000);
      proxy.restore();
      assert.deepEqual((await reconnected)[0], { newSession: true }, label);
      await session.create('/eph', undefined, 'ephemeral');
      assert.equal((await observer.exists('/eph'))?.ephemeralOwner, session.sessionId);
    }),
  );
});

test('silent partition shorter than the session: suspended, then the same session resumes', async (t) => {
  const defer = cleanups(t);
  const { proxy, session } = await sessionBehindProxy(t, defer, { sessionTimeout: 12_000 });
  await session.create('/eph', undefined, 'ephemeral');
  const id = session.sessionId;
  const suspended = nextEvent(session, 'suspended', 30_000);
  proxy.partition();
  await suspended;
  const reconnected = nextEvent<[{ newSession: boolean }]>(session, 'reconnected', 30_000);
  proxy.restore();
  assert.deepEqual((await reconnected)[0], { newSession: false });
  assert.equal(session.sessionId, id);
  assert.equal((await session.exists('/eph'))?.ephemeralOwner, id);
});

test('silent partition of one server of two: suspended, then the same session resumes through the other at once', async (t) => {
  const defer = cleanups(t);
  const target = await sharedZooKeeper();
  const proxies = [await TcpProxy.start(target), await TcpProxy.start(target)];
  for (const p of proxies) defer(() => p.stop());
  const session = await testSession(
    { name: t.name, after: (fn) => defer(fn) },
    { connectionString: proxies.map((p) => p.connectionString).join(','), sessionTimeout: 12_000 },
  );
  await session.create('/eph', undefined, 'ephemeral');
  const id = session.sessionId;
  const used = proxies.find((p) => p.connections > 0) as TcpProxy;
  const suspended = nextEvent(session, 'suspended', 30_000);
  const reconnected = nextEvent<[{ newSession: boolean }]>(session, 'reconnected', 30_000);
  used.partition();
  await suspended;
  // through the other server, long before the session could expire (the partitioned link stays dead)
  assert.deepEqual((await reconnected)[0], { newSession: false });
  assert.equal(session.sessionId, id);
  assert.equal((await session.exists('/eph'))?.ephemeralOwner, id);
});
