/** Every operation and every error class of the session layer, against a real server. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BadArgumentsError,
  BadVersionError,
  ConnectTimeoutError,
  NoChildrenForEphemeralsError,
  NodeExistsError,
  NoNodeError,
  NotEmptyError,
  RequestTimeoutError,
  Session,
  SessionClosedError,
  type WatchEvent,
  ZooKeeperError,
} from '@zkq/core';
import { MAX_DATA_BYTES } from '@zkq/core/internal';
import { freePort, sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { testSession, waitFor } from '../../helpers/zk.js';

/** An assert.rejects matcher: the typed error, its stable code and the path inside the namespace. */
function typed(cls: abstract new (...args: never[]) => ZooKeeperError, code: string, path?: string) {
  return (err: unknown) => {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    assert.ok(err instanceof ZooKeeperError);
    assert.equal(err.code, code);
    if (path !== undefined) assert.equal(err.path, path);
    return true;
  };
}

/** A watcher whose next event can be awaited. */
function watchRecorder() {
  const events: WatchEvent[] = [];
  return {
    events,
    watch: (e: WatchEvent) => events.push(e),
    next: () => waitFor(() => events[0], { what: 'a watch event' }),
  };
}

test('create: all four modes; sequential names carry a 10-digit suffix', async (t) => {
  const s = await testSession(t);
  assert.equal(await s.create('/p', Buffer.from('p')), '/p');
  assert.equal(await s.create('/e', undefined, 'ephemeral'), '/e');
  const ps = await s.create('/p/q-', Buffer.from('1'), 'persistent_sequential');
  const es = await s.create('/p/e-', undefined, 'ephemeral_sequential');
  assert.match(ps, /^\/p\/q-\d{10}$/);
  assert.match(es, /^\/p\/e-\d{10}$/);
  assert.ok(Number(es.slice(-10)) > Number(ps.slice(-10)), 'sequence numbers grow under one parent');

  const p = await s.exists('/p');
  const e = await s.exists('/e');
  const esStat = await s.exists(es);
  assert.equal(p?.ephemeralOwner, '0');
  assert.equal(e?.ephemeralOwner, s.sessionId, 'ephemeralOwner and sessionId are the same form');
  assert.equal(esStat?.ephemeralOwner, s.sessionId);
  assert.equal((await s.getData(ps)).data.toString(), '1');
  assert.deepEqual((await s.getChildren('/p')).sort(), [ps.slice(3), es.slice(3)].sort());
});

test('create: errors NodeExists, NoNode (missing parent), NoChildrenForEphemerals', async (t) => {
  const s = await testSession(t);
  await s.create('/a');
  await assert.rejects(s.create('/a'), typed(NodeExistsError, 'ZK_NODE_EXISTS', '/a'));
  await assert.rejects(s.create('/missing/child'), typed(NoNodeError, 'ZK_NO_NODE', '/missing/child'));
  await s.create('/eph', undefined, 'ephemeral');
  await assert.rejects(
    s.create('/eph/child'),
    typed(NoChildrenForEphemeralsError, 'ZK_NO_CHILDREN_FOR_EPHEMERALS', '/eph/child'),
  );
});

test('createProtected: the name carries a per-call id before the sequence number', async (t) => {
  const s = await testSession(t);
  await s.create('/q');
  const a = await s.createProtected('/q/job-', Buffer.from('a'));
  const b = await s.createProtected('/q/job-', Buffer.from('b'), 'ephemeral_sequential');
  assert.match(a, /^\/q\/job-[0-9a-f]{12}-\d{10}$/);
  assert.match(b, /^\/q\/job-[0-9a-f]{12}-\d{10}$/);
  assert.notEqual(a.slice(0, -10), b.slice(0, -10));
  assert.equal((await s.getData(a)).data.toString(), 'a');
  assert.notEqual((await s.exists(b))?.ephemeralOwner, '0');
  assert.equal((await s.getChildren('/q')).length, 2);
  await assert.rejects(s.createProtected('/nowhere/job-'), typed(NoNodeError, 'ZK_NO_NODE'));
});

test('delete: any version, an exact version, BadVersion, NoNode, NotEmpty', async (t) => {
  const s = await testSession(t);
  await s.create('/a');
  await s.delete('/a');
  assert.equal(await s.exists('/a'), null);

  await s.create('/v');
  await s.setData('/v', Buffer.from('1'));
  await assert.rejects(s.delete('/v', 0), typed(BadVersionError, 'ZK_BAD_VERSION', '/v'));
  await s.delete('/v', 1);
  await assert.rejects(s.delete('/v'), typed(NoNodeError, 'ZK_NO_NODE', '/v'));

  await s.create('/parent');
  await s.create('/parent/child');
  await assert.rejects(s.delete('/parent'), typed(NotEmptyError, 'ZK_NOT_EMPTY', '/parent'));
});

test('exists, getData, setData: stats, versions, BadVersion, NoNode', async (t) => {
  const s = await testSession(t);
  assert.equal(await s.exists('/n'), null);
  await s.create('/n', Buffer.from('one'));
  const created = await s.exists('/n');
  assert.ok(created);
  assert.equal(created.version, 0);
  assert.equal(created.dataLength, 3);
  assert.equal(created.numChildren, 0);
  assert.ok(created.ctime > Date.now() - 600_000 && created.ctime <= Date.now() + 60_000);

  const st1 = await s.setData('/n', Buffer.from('two'), 0);
  assert.equal(st1.version, 1);
  assert.ok(st1.mzxid > created.mzxid);
  await assert.rejects(s.setData('/n', Buffer.from('stale'), 0), typed(BadVersionError, 'ZK_BAD_VERSION', '/n'));
  const st2 = await s.setData('/n', Buffer.from('three'));
  assert.equal(st2.version, 2);
  const { data, stat } = await s.getData('/n');
  assert.equal(data.toString(), 'three');
  assert.equal(stat.version, 2);

  await s.create('/empty');
  assert.equal((await s.getData('/empty')).data.length, 0);
  await assert.rejects(s.getData('/none'), typed(NoNodeError, 'ZK_NO_NODE', '/none'));
  await assert.rejects(s.setData('/none', Buffer.from('x')), typed(NoNodeError, 'ZK_NO_NODE', '/none'));
});

test('getChildren: names, empty list, NoNode, and the namespace root', async (t) => {
  const s = await testSession(t);
  await s.create('/c');
  assert.deepEqual(await s.getChildren('/c'), []);
  for (const n of ['x', 'y', 'z']) await s.create(`/c/${n}`);
  assert.deepEqual((await s.getChildren('/c')).sort(), ['x', 'y', 'z']);
  assert.deepEqual(await s.getChildren('/'), ['c']);
  await assert.rejects(s.getChildren('/nope'), typed(NoNodeError, 'ZK_NO_NODE', '/nope'));
  assert.ok(s.stats.maxChildren >= 3);
});

test('multi: success results in order', async (t) => {
  const s = await testSession(t);
  await s.create('/m', Buffer.from('0'));
  await s.create('/gone');
  const results = await s.multi([
    { op: 'create', path: '/m/a', data: Buffer.from('a') },
    { op: 'create', path: '/m/s-', mode: 'persistent_sequential' },
    { op: 'check', path: '/m', version: 0 },
    { op: 'setData', path: '/m', data: Buffer.from('1'), version: 0 },
    { op: 'delete', path: '/gone', version: 0 },
  ]);
  assert.equal(results.length, 5);
  assert.deepEqual(results[0], { op: 'create', path: '/m/a' });
  assert.equal(results[1]?.op, 'create');
  assert.match((results[1] as { path: string }).path, /^\/m\/s-\d{10}$/);
  assert.deepEqual(results[2], { op: 'check' });
  assert.equal(results[3]?.op, 'setData');
  assert.equal((results[3] as { stat: { version: number } }).stat.version, 1);
  assert.deepEqual(results[4], { op: 'delete' });
  assert.equal(await s.exists('/gone'), null);
  assert.equal((await s.getData('/m')).data.toString(), '1');
  assert.deepEqual(await s.multi([]), []);
});

test('multi: a failing op rejects with its typed error and opIndex; nothing is applied', async (t) => {
  const s = await testSession(t);
  await s.create('/m', Buffer.from('0'));
  await s.setData('/m', Buffer.from('1')); // version 1

  const cases = [
    {
      ops: [
        { op: 'create', path: '/m/a' },
        { op: 'check', path: '/m', version: 7 },
      ],
      cls: BadVersionError,
      i: 1,
    },
    {
      ops: [
        { op: 'create', path: '/m/a' },
        { op: 'create', path: '/m' },
      ],
      cls: NodeExistsError,
      i: 1,
    },
    {
      ops: [
        { op: 'create', path: '/m/a' },
        { op: 'delete', path: '/m/none' },
      ],
      cls: NoNodeError,
      i: 1,
    },
    { ops: [{ op: 'setData', path: '/m', data: Buffer.from('x'), version: 0 }], cls: BadVersionError, i: 0 },
    // Version 0 is a real version (a node never written since its creation), not "any".
    {
      ops: [
        { op: 'create', path: '/m/a' },
        { op: 'check', path: '/m', version: 0 },
      ],
      cls: BadVersionError,
      i: 1,
    },
    {
      ops: [
        { op: 'create', path: '/m/a' },
        { op: 'delete', path: '/m', version: 0 },
      ],
      cls: BadVersionError,
      i: 1,
    },
    {
      ops: [
        { op: 'create', path: '/m/a' },
        { op: 'create', path: '/m/b' },
        { op: 'delete', path: '/m' },
      ],
      cls: NotEmptyError,
      i: 2,
    },
  ] as const;
  for (const c of cases) {
    await assert.rejects(s.multi(c.ops), (err: unknown) => {
      assert.ok(err instanceof c.cls, `expected ${c.cls.name}, got ${String(err)}`);
      assert.equal(err.opIndex, c.i);
      assert.equal(err.path, c.ops[c.i]?.path);
      return true;
    });
  }
  assert.deepEqual(await s.getChildren('/m'), [], 'no create of a failed multi was applied');
  const { data, stat } = await s.getData('/m');
  assert.equal(data.toString(), '1');
  assert.equal(stat.version, 1);
});

test('ensurePath and deleteRecursive', async (t) => {
  const s = await testSession(t);
  await s.ensurePath('/a/b/c/d');
  await s.ensurePath('/a/b/c/d'); // idempotent
  assert.ok(await s.exists('/a/b/c/d'));
  for (let i = 0; i < 100; i++) await s.create(`/a/b/n${i}`);
  await s.create('/a/b/c/e', undefined, 'ephemeral');
  await s.deleteRecursive('/a/b');
  assert.equal(await s.exists('/a/b'), null);
  assert.ok(await s.exists('/a'));
  await s.deleteRecursive('/a/none'); // a missing node is fine
  await s.create('/z');
  await s.deleteRecursive('/');
  assert.deepEqual(await s.getChildren('/'), [], 'the namespace root is emptied, not deleted');
});

test('ensurePath under an ancestor makes only the nodes below it, and nothing when the ancestor is missing', async (t) => {
  const s = await testSession(t);
  await assert.rejects(s.ensurePath('/top/a/b', { under: '/top' }), NoNodeError);
  assert.equal(await s.exists('/top'), null, 'the missing ancestor is not made');
  await s.create('/top');
  await s.ensurePath('/top/a/b', { under: '/top' });
  assert.ok(await s.exists('/top/a/b'));
  await assert.rejects(s.ensurePath('/elsewhere/a', { under: '/top' }), BadArgumentsError);
});

test('watches: created, deleted, dataChanged, childrenChanged fire once with namespace paths', async (t) => {
  const s = await testSession(t);
  const other = await testSession(t, { namespace: s.namespace });

  const created = watchRecorder();
  assert.equal(await s.exists('/w', { watch: created.watch }), null);
  await other.create('/w', Buffer.from('0'));
  assert.deepEqual(await created.next(), { type: 'created', path: '/w' });

  const changed = watchRecorder();
  await s.getData('/w', { watch: changed.watch });
  await other.setData('/w', Buffer.from('1'));
  assert.deepEqual(await changed.next(), { type: 'dataChanged', path: '/w' });

  const children = watchRecorder();
  await s.getChildren('/w', { watch: children.watch });
  await other.create('/w/kid');
  assert.deepEqual(await children.next(), { type: 'childrenChanged', path: '/w' });
  await other.delete('/w/kid');

  const deleted = watchRecorder();
  await s.exists('/w', { watch: deleted.watch });
  await other.delete('/w');
  assert.deepEqual(await deleted.next(), { type: 'deleted', path: '/w' });

  // One-shot: later changes are not reported. A fresh watch on the same path
  // fires, so by the time it has, an extra event on the old ones would be in.
  const last = watchRecorder();
  await s.exists('/w', { watch: last.watch });
  await other.create('/w');
  await last.next();
  for (const r of [created, changed, children, deleted]) assert.equal(r.events.length, 1);
});

test('watches: a read that fails sets no watch and never reports', async (t) => {
  const s = await testSession(t);
  const r = watchRecorder();
  await assert.rejects(s.getData('/missing', { watch: r.watch }), NoNodeError);
  await assert.rejects(s.getChildren('/missing', { watch: r.watch }), NoNodeError);
  await s.create('/missing');
  await s.create('/missing/kid');
  await s.close();
  // Closing drops pending watches silently; a leaked one would have said sessionLost or created.
  assert.deepEqual(r.events, []);
});

test('BadArgumentsError: malformed paths are refused before they can leave the namespace', async (t) => {
  const s = await testSession(t);
  for (const bad of ['relative', '', '/a/', '/a//b', '/a/./b', '/a/../b', '/a\u0000b']) {
    await assert.rejects(s.create(bad), typed(BadArgumentsError, 'ZK_BAD_ARGUMENTS'), `create('${bad}')`);
    await assert.rejects(s.getData(bad), BadArgumentsError, `getData('${bad}')`);
    await assert.rejects(s.delete(bad), BadArgumentsError, `delete('${bad}')`);
    await assert.rejects(s.multi([{ op: 'create', path: bad }]), BadArgumentsError, `multi create '${bad}'`);
  }
  // Nothing was made next to the namespace node (e.g. `<namespace>relative`).
  const root = await Session.connect({ connectionString: await sharedZooKeeper() });
  t.after(() => root.close());
  const siblings = await root.getChildren('/');
  assert.deepEqual(
    siblings.filter((n) => n.startsWith(s.namespace.slice(1)) && `/${n}` !== s.namespace),
    [],
  );
  assert.ok(await s.exists('/'), 'the session still works');
});

test('BadArgumentsError: oversized data and an oversized multi are refused locally; the connection survives', async (t) => {
  const s = await testSession(t);
  const sessionId = s.sessionId;
  const big = Buffer.alloc(MAX_DATA_BYTES + 1, 1);
  await assert.rejects(s.create('/big', big), typed(BadArgumentsError, 'ZK_BAD_ARGUMENTS', '/big'));
  await s.create('/small');
  await assert.rejects(s.setData('/small', big), typed(BadArgumentsError, 'ZK_BAD_ARGUMENTS', '/small'));

  const chunk = Buffer.alloc(300 * 1024, 2);
  const ops = [0, 1, 2, 3].map((i) => ({ op: 'create' as const, path: `/m${i}`, data: chunk }));
  const requestsBefore = s.stats.requests;
  await assert.rejects(s.multi(ops), typed(BadArgumentsError, 'ZK_BAD_ARGUMENTS'));
  assert.equal(s.stats.requests, requestsBefore, 'the multi was never sent');

  // Data up to the limit is fine, and the session is the same one.
  const atLimit = Buffer.alloc(MAX_DATA_BYTES, 3);
  await s.create('/limit', atLimit);
  assert.equal((await s.getData('/limit')).data.length, MAX_DATA_BYTES);
  assert.equal(s.sessionId, sessionId);
  assert.equal(s.state, 'connected');
  assert.deepEqual((await s.getChildren('/')).sort(), ['limit', 'small']);
});

test('RequestTimeoutError: a frozen connection times requests out', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, {
    connectionString: proxy.connectionString,
    requestTimeout: 800,
    retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 10 },
  });
  await s.create('/n');
  proxy.freeze();
  const started = Date.now();
  await assert.rejects(s.setData('/n', Buffer.from('x')), (err: unknown) => {
    assert.ok(err instanceof RequestTimeoutError);
    assert.equal(err.code, 'ZK_REQUEST_TIMEOUT');
    assert.equal(err.path, '/n');
    assert.equal(err.timeoutMs, 800);
    return true;
  });
  assert.ok(Date.now() - started >= 700);
  // Reads are retried, then give up with the same error.
  await assert.rejects(s.getData('/n'), RequestTimeoutError);
  proxy.restore();
});

test('ConnectTimeoutError: nothing listening at the address', async () => {
  const port = await freePort();
  const started = Date.now();
  await assert.rejects(
    Session.connect({ connectionString: `127.0.0.1:${port}`, connectTimeout: 1000 }),
    (err: unknown) => {
      assert.ok(err instanceof ConnectTimeoutError);
      assert.equal(err.code, 'ZK_CONNECT_TIMEOUT');
      assert.equal(err.path, undefined);
      assert.equal(err.connectionString, `127.0.0.1:${port}`);
      assert.equal(err.timeoutMs, 1000);
      return true;
    },
  );
  assert.ok(Date.now() - started < 10_000);
  await assert.rejects(Session.connect({ connectionString: '' }), BadArgumentsError);
});

test('SessionClosedError: every operation after close()', async (t) => {
  const s = await testSession(t);
  await s.create('/n');
  const closed: string[] = [];
  s.on('state', (st) => closed.push(st));
  await s.close();
  await s.close(); // idempotent
  assert.equal(s.state, 'closed');
  assert.equal(s.closed, true);
  assert.deepEqual(closed, ['closed']);
  const check = typed(SessionClosedError, 'ZK_SESSION_CLOSED', '/n');
  await assert.rejects(s.create('/n'), check);
  await assert.rejects(s.getData('/n'), check);
  await assert.rejects(s.exists('/n'), check);
  await assert.rejects(s.setData('/n', Buffer.from('x')), check);
  await assert.rejects(s.delete('/n'), check);
  await assert.rejects(s.getChildren('/n'), check);
  await assert.rejects(s.multi([{ op: 'delete', path: '/n' }]), check);
  await assert.rejects(s.createProtected('/n/x-'), SessionClosedError);
});
