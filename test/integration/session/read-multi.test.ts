/** Session.readMulti (ZooKeeper's read-only multi) against a real server. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BadArgumentsError, NoNodeError, type ReadOp, Session, ZooKeeperError } from '@zkq/core';
import { MAX_DATA_BYTES, readMultiBatchSize } from '@zkq/core/internal';
import { sharedZooKeeper, TcpProxy, uniqueRoot } from '@zkq/testing';
import { nextEvent, testSession } from '../../helpers/zk.js';

test('readMulti: getData and getChildren mixed, in order, each equal to the single read', async (t) => {
  const s = await testSession(t);
  await s.create('/a', Buffer.from('alpha'));
  await s.create('/b');
  await s.create('/b/x', Buffer.from('x'));
  await s.create('/b/y');
  await s.setData('/a', Buffer.from('alpha-2'));

  const requests = s.stats.requests;
  const [a, b, root, bx] = await s.readMulti([
    { op: 'getData', path: '/a' },
    { op: 'getChildren', path: '/b' },
    { op: 'getChildren', path: '/' },
    { op: 'getData', path: '/b/x' },
  ]);
  assert.equal(s.stats.requests, requests + 1, 'one request for all four reads');

  assert.ok(a.ok && b.ok && root.ok && bx.ok);
  assert.deepEqual(a, { ok: true, ...(await s.getData('/a')) });
  assert.equal(a.data.toString(), 'alpha-2');
  assert.equal(a.stat.version, 1);
  assert.deepEqual(b.children.sort(), ['x', 'y']);
  assert.deepEqual(b.children.sort(), (await s.getChildren('/b')).sort());
  assert.deepEqual(root.children.sort(), ['a', 'b']);
  assert.deepEqual(bx, { ok: true, ...(await s.getData('/b/x')) });
  // A node without data reads as an empty buffer, as getData does.
  const [y] = await s.readMulti([{ op: 'getData', path: '/b/y' }]);
  assert.ok(y.ok);
  assert.equal(y.data.length, 0);
  assert.deepEqual(y, { ok: true, ...(await s.getData('/b/y')) });
});

test('readMulti: a missing node fails only its own read, with a typed error naming its path', async (t) => {
  const s = await testSession(t);
  await s.create('/here', Buffer.from('1'));
  const results = await s.readMulti([
    { op: 'getData', path: '/gone' },
    { op: 'getData', path: '/here' },
    { op: 'getChildren', path: '/gone/too' },
    { op: 'getChildren', path: '/here' },
  ]);
  const [gone, here, goneToo, kids] = results;
  assert.equal(gone.ok, false);
  assert.ok(!gone.ok && gone.error instanceof NoNodeError && gone.error instanceof ZooKeeperError);
  assert.equal(gone.error.code, 'ZK_NO_NODE');
  assert.equal(gone.error.path, '/gone');
  assert.ok(!goneToo.ok && goneToo.error instanceof NoNodeError);
  assert.equal(goneToo.error.path, '/gone/too');
  assert.ok(here.ok);
  assert.equal(here.data.toString(), '1');
  assert.deepEqual(kids, { ok: true, children: [] });
  // Every read failing is still a reply, not a rejection.
  const none = await s.readMulti([
    { op: 'getData', path: '/no1' },
    { op: 'getChildren', path: '/no2' },
  ]);
  assert.ok(none.every((r) => !r.ok && r.error instanceof NoNodeError));
});

test('readMulti: paths are inside the namespace', async (t) => {
  const namespace = uniqueRoot('read-multi-ns');
  const s = await testSession(t, { namespace });
  const bare = await testSession(t, { namespace: '/' });
  await s.create('/n', Buffer.from('inside'));
  await s.create('/n/c');
  const [n, c, root] = await s.readMulti([
    { op: 'getData', path: '/n' },
    { op: 'getChildren', path: '/n' },
    { op: 'getChildren', path: '/' },
  ]);
  assert.ok(n.ok && c.ok && root.ok);
  assert.equal(n.data.toString(), 'inside');
  assert.deepEqual(c.children, ['c']);
  assert.deepEqual(root.children, ['n']);
  // The same nodes, read from the server's root.
  const [outside] = await bare.readMulti([{ op: 'getData', path: `${namespace}/n` }]);
  assert.ok(outside.ok);
  assert.deepEqual(outside.stat, n.stat);
  // A path that would leave the namespace is refused before sending.
  await assert.rejects(s.readMulti([{ op: 'getData', path: '/../x' }]), BadArgumentsError);
});

test('readMulti: 500 records of 1 KB in one request', async (t) => {
  const s = await testSession(t);
  await s.create('/jobs');
  const count = 500;
  const record = (i: number) => Buffer.alloc(1024, i % 251);
  const name = (i: number) => `/jobs/r-${String(i).padStart(4, '0')}`;
  for (let i = 0; i < count; i += 100) {
    await s.multi(
      Array.from({ length: 100 }, (_, k) => ({ op: 'create' as const, path: name(i + k), data: record(i + k) })),
    );
  }
  assert.ok(count <= readMultiBatchSize(1024), 'the documented batch size allows it');

  const reads: ReadOp[] = Array.from({ length: count }, (_, i) => ({ op: 'getData', path: name(i) }));
  reads.push({ op: 'getChildren', path: '/jobs' });
  const requests = s.stats.requests;
  const results = await s.readMulti(reads);
  assert.equal(s.stats.requests, requests + 1);
  assert.equal(results.length, count + 1);
  for (let i = 0; i < count; i++) {
    const r = results[i];
    assert.ok(r?.ok && 'data' in r, `record ${i}`);
    assert.ok(r.data.equals(record(i)), `record ${i} data`);
    assert.equal(r.stat.dataLength, 1024);
  }
  const listing = results[count];
  assert.ok(listing?.ok && 'children' in listing);
  assert.equal(listing.children.length, count);
  assert.equal(s.stats.maxChildren, count);
  // Spot-check against single reads, stats included.
  for (const i of [0, 249, 499]) {
    assert.deepEqual(results[i], { ok: true, ...(await s.getData(name(i))) });
  }
});

test('readMulti: a request past the packet limit is refused before sending', async (t) => {
  const s = await testSession(t);
  const long = `/${'p'.repeat(4000)}`;
  const reads = Array.from({ length: 300 }, () => ({ op: 'getData' as const, path: long }));
  const requests = s.stats.requests;
  await assert.rejects(s.readMulti(reads), (err: unknown) => {
    assert.ok(err instanceof BadArgumentsError);
    assert.equal(err.code, 'ZK_BAD_ARGUMENTS');
    return true;
  });
  await assert.rejects(s.readMulti([{ op: 'exists', path: '/x' } as unknown as ReadOp]), BadArgumentsError);
  assert.deepEqual(await s.readMulti([]), []);
  assert.equal(s.stats.requests, requests, 'nothing was sent');
  // One node at the data limit reads fine through a multi of one.
  await s.create('/big', Buffer.alloc(MAX_DATA_BYTES, 7));
  const [big] = await s.readMulti([{ op: 'getData', path: '/big' }]);
  assert.ok(big.ok);
  assert.equal(big.data.length, MAX_DATA_BYTES);
  assert.equal(readMultiBatchSize(MAX_DATA_BYTES), 1);
});

test('readMulti: a connection cut with the request in flight is retried on the same session', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, {
    connectionString: proxy.connectionString,
    sessionTimeout: 8000,
    retry: { maxAttempts: 50, baseDelayMs: 20, maxDelayMs: 100, deadlineMs: 20_000 },
  });
  await s.create('/r', Buffer.from('kept'));
  const sessionId = s.sessionId;
  const requests = s.stats.requests;

  proxy.dropReplies();
  const suspended = nextEvent(s, 'suspended');
  // The request is written to the socket before readMulti returns: the cut catches it in flight.
  const reading = s.readMulti([
    { op: 'getData', path: '/r' },
    { op: 'getChildren', path: '/' },
  ]);
  proxy.cut();
  await suspended;
  proxy.restore();

  const [r, root] = await reading;
  assert.ok(r.ok && root.ok);
  assert.equal(r.data.toString(), 'kept');
  assert.deepEqual(root.children, ['r']);
  assert.ok(s.stats.requests >= requests + 2, 'the read was sent again');
  assert.equal(s.sessionId, sessionId, 'the same session');
});

test('readMulti: ordered with the session requests around it', async (t) => {
  const s = await testSession(t);
  await s.create('/o', Buffer.from('0'));
  // Not awaited in between: the read goes after the write and before the next one.
  const first = s.setData('/o', Buffer.from('1'));
  const read = s.readMulti([{ op: 'getData', path: '/o' }]);
  const second = s.setData('/o', Buffer.from('2'));
  await Promise.all([first, second]);
  const [o] = await read;
  assert.ok(o.ok);
  assert.equal(o.data.toString(), '1');
  assert.equal(o.stat.version, 1);
});

test('readMulti: a closed session refuses it', async () => {
  const s = await Session.connect({ connectionString: await sharedZooKeeper(), namespace: uniqueRoot('rm-closed') });
  await s.close();
  await assert.rejects(s.readMulti([{ op: 'getData', path: '/x' }]), (err: unknown) => {
    assert.ok(err instanceof ZooKeeperError);
    assert.equal(err.code, 'ZK_SESSION_CLOSED');
    return true;
  });
});
