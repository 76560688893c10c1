/**
 * Connection states against a real server: expiry, a short disconnect, a
 * reply torn by a dying connection, a silent partition, and a suspension
 * longer than the session timeout.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoNodeError, RequestTimeoutError, SessionExpiredError, type WatchEvent } from '@zkq/core';
import { expireSession, sharedZooKeeper } from '@zkq/testing';
import { sessionThroughProxy } from '../../helpers/partition.js';
import { nextEvent, testSession, waitFor } from '../../helpers/zk.js';

function recorder() {
  const events: WatchEvent[] = [];
  return { events, watch: (e: WatchEvent) => events.push(e) };
}

test('expiry: lost, hooks, then reconnected as a new session; ephemerals and watches are gone', async (t) => {
  const connectionString = await sharedZooKeeper();
  const s = await testSession(t, { sessionTimeout: 4000 });
  const observer = await testSession(t, { namespace: s.namespace });
  await s.create('/eph', undefined, 'ephemeral');
  await s.create('/p');
  const dataWatch = recorder();
  const childWatch = recorder();
  const failedWatch = recorder();
  await s.getData('/p', { watch: dataWatch.watch });
  await s.getChildren('/p', { watch: childWatch.watch });
  await assert.rejects(s.getData('/missing', { watch: failedWatch.watch }), NoNodeError);

  const order: string[] = [];
  s.on('state', (st) => order.push(st));
  let hookSawOwnEphemeral: boolean | undefined;
  const unsubscribe = s.onNewSession(async () => {
    order.push('hook');
    // The hook runs on the new session: it can already talk to the server.
    hookSawOwnEphemeral = (await s.exists('/eph')) !== null;
    await s.create('/eph', undefined, 'ephemeral');
  });
  const oldId = s.sessionId;
  const lost = nextEvent(s, 'lost', 60_000);
  // Expiring a session takes it over from another connection first: the client may be cut off and
  // get its old session back (a `reconnected` without a new session) before the session is closed.
  const reconnected = new Promise<{ newSession: boolean }>((resolve) => {
    const onReconnected = (info: { newSession: boolean }) => {
      if (!info.newSession) return;
      s.off('reconnected', onReconnected);
      resolve(info);
    };
    s.on('reconnected', onReconnected);
  });

  await expireSession(connectionString, s.credentials());
  await lost;
  assert.deepEqual(await reconnected, { newSession: true });
  assert.equal(s.state, 'reconnected');
  const iLost = order.indexOf('lost');
  const iHook = order.indexOf('hook');
  const iReconnected = order.indexOf('reconnected', iLost);
  assert.ok(iLost >= 0 && iLost < iHook && iHook < iReconnected, `order: ${order.join(', ')}`);
  assert.equal(hookSawOwnEphemeral, false, 'the old session ephemeral was gone when the hook ran');

  assert.deepEqual(dataWatch.events, [{ type: 'sessionLost', path: '/p' }]);
  assert.deepEqual(childWatch.events, [{ type: 'sessionLost', path: '/p' }]);
  assert.deepEqual(failedWatch.events, [], 'a failed read left no watch behind');

  assert.notEqual(s.sessionId, oldId);
  assert.equal(s.stats.sessionsCreated, 2);
  // The hook re-created the ephemeral under the new session.
  assert.equal((await observer.exists('/eph'))?.ephemeralOwner, s.sessionId);
  await s.create('/after', Buffer.from('ok'));
  assert.equal((await observer.getData('/after')).data.toString(), 'ok');
  assert.deepEqual((await s.getChildren('/')).sort(), ['after', 'eph', 'p']);

  // Watches set on the new session work.
  const fresh = recorder();
  await s.getData('/after', { watch: fresh.watch });
  await observer.setData('/after', Buffer.from('changed'));
  await waitFor(() => fresh.events.length === 1, { what: 'the new watch' });
  assert.deepEqual(fresh.events, [{ type: 'dataChanged', path: '/after' }]);
  unsubscribe();
});

test('short disconnect: suspended then reconnected with the same session; ephemerals survive', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 15_000 });
  await s.create('/eph', undefined, 'ephemeral');
  const oldId = s.sessionId;
  const states: string[] = [];
  s.on('state', (st) => states.push(st));
  let hooks = 0;
  s.onNewSession(() => {
    hooks++;
  });

  const suspended = nextEvent(s, 'suspended');
  proxy.cut();
  await suspended;
  assert.equal(s.state, 'suspended');
  const reconnected = nextEvent<[{ newSession: boolean }]>(s, 'reconnected', 30_000);
  proxy.restore();
  const [info] = await reconnected;
  assert.deepEqual(info, { newSession: false });
  assert.deepEqual(states, ['suspended', 'reconnected']);
  assert.equal(hooks, 0, 'no new-session hook for the same session');
  assert.equal(s.sessionId, oldId);
  assert.equal((await s.exists('/eph'))?.ephemeralOwner, oldId);
  await s.create('/after');
});

test('a reply torn when its connection died: the next connection reads clean, the same session resumes', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 15_000 });
  await s.create('/eph', undefined, 'ephemeral');
  const oldId = s.sessionId;
  const states: string[] = [];
  s.on('state', (st) => states.push(st));
  // The reply reaches the client but for its last byte, then the connection dies.
  const torn = proxy.tearReplies();
  const read = s.getData('/eph').then(
    () => 'read',
    (err: unknown) => err,
  );
  await torn;
  const reconnected = nextEvent<[{ newSession: boolean }]>(s, 'reconnected', 30_000);
  proxy.cut();
  proxy.restore();
  const [info] = await reconnected;
  assert.deepEqual(info, { newSession: false });
  assert.equal(await read, 'read'); // sent again on the new connection
  assert.equal((await s.exists('/eph'))?.ephemeralOwner, oldId);
  assert.equal(s.sessionId, oldId);
  assert.deepEqual(states, ['suspended', 'reconnected']);
  assert.equal(s.stats.sessionsCreated, 1);
});

test('silent partition: an unanswered request drops the connection, so the session is suspended, then resumes', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, {
    sessionTimeout: 15_000,
    requestTimeout: 1000,
    retry: { maxAttempts: 1 },
  });
  await s.create('/eph', undefined, 'ephemeral');
  const oldId = s.sessionId;
  // The sockets stay open but nothing gets through: the wire client alone never notices.
  proxy.freeze();
  const suspended = nextEvent(s, 'suspended', 10_000);
  await assert.rejects(s.setData('/eph', Buffer.from('x')), RequestTimeoutError);
  await suspended;
  const reconnected = nextEvent<[{ newSession: boolean }]>(s, 'reconnected', 30_000);
  proxy.restore();
  const [info] = await reconnected;
  assert.deepEqual(info, { newSession: false });
  assert.equal(s.sessionId, oldId);
  assert.equal((await s.exists('/eph'))?.ephemeralOwner, oldId);
});

test('silent partition of an idle session: its own probe notices', async (t) => {
  // sessionTimeout 3000: the probe reads after 1 s of quiet; its reply is due within 1 s.
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 3000, requestTimeout: 1000 });
  const suspended = nextEvent(s, 'suspended', 15_000);
  proxy.freeze(); // and send nothing ourselves
  await suspended;
  proxy.restore();
  await nextEvent(s, 'reconnected', 30_000);
});

test('suspension past the session timeout: lost while cut off, a new session after restore', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 2000, requestTimeout: 60_000 });
  const observer = await testSession(t, { namespace: s.namespace });
  await s.create('/p', Buffer.from('v'));
  await s.create('/eph', undefined, 'ephemeral');
  const watch = recorder();
  await s.getData('/p', { watch: watch.watch });
  const states: string[] = [];
  s.on('state', (st) => states.push(st));

  const suspended = nextEvent(s, 'suspended');
  const lost = nextEvent(s, 'lost', 30_000);
  proxy.cut();
  await suspended;
  // Issued while suspended: they wait in the client's queue for a connection.
  const write = s.setData('/p', Buffer.from('w'));
  const read = s.getData('/p');
  const started = Date.now();
  await lost;
  assert.deepEqual(states, ['suspended', 'lost']);
  assert.deepEqual(watch.events, [{ type: 'sessionLost', path: '/p' }]);
  // The write never reached a server: it fails when the session is declared
  // lost, not at the (60 s) request timeout. Writes are not retried.
  await assert.rejects(write, SessionExpiredError);
  assert.ok(Date.now() - started < 30_000);

  const reconnected = nextEvent<[{ newSession: boolean }]>(s, 'reconnected', 30_000);
  proxy.restore();
  const [info] = await reconnected;
  assert.deepEqual(info, { newSession: true });
  // The read is retried on the new session.
  assert.equal((await read).data.toString(), 'v');
  await waitFor(async () => (await observer.exists('/eph')) === null, { what: 'the old ephemeral to go' });
  await s.create('/eph', undefined, 'ephemeral');
  assert.equal((await observer.exists('/eph'))?.ephemeralOwner, s.sessionId);
});
