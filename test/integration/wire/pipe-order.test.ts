/**
 * The request pipe on a real server: requests of one tick go out in one
 * write and replies are framed by offset; each caller must still get its
 * own reply, in the session's FIFO order, whatever the sizes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DATA_BYTES } from '@zkq/core/internal';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { testSession } from '../../helpers/zk.js';

test('one tick: create, getData, multi, readMulti, getChildren, delete each see the ones before', async (t) => {
  const s = await testSession(t);
  const created = s.create('/a', Buffer.from('one'));
  const read1 = s.getData('/a');
  const written = s.multi([{ op: 'setData', path: '/a', data: Buffer.from('two'), version: 0 }]);
  const read2 = s.readMulti([
    { op: 'getData', path: '/a' },
    { op: 'getChildren', path: '/' },
  ] as const);
  const made = s.create('/a/b');
  const kids = s.getChildren('/a');
  const gone = s.delete('/a/b');
  const after = s.exists('/a/b');
  assert.equal(await created, '/a');
  assert.equal((await read1).data.toString(), 'one');
  await written;
  const [d, c] = await read2;
  assert.ok(d.ok && c.ok);
  assert.equal(d.data.toString(), 'two');
  assert.deepEqual(c.children, ['a']);
  assert.equal(await made, '/a/b');
  assert.deepEqual(await kids, ['b']);
  await gone;
  assert.equal(await after, null);
});

test('big and small at once: a near-limit node, a readMulti of big nodes and 3,000 small reads', async (t) => {
  const s = await testSession(t);
  const big = Buffer.alloc(MAX_DATA_BYTES, 7);
  const half = Buffer.alloc(400 * 1024, 9);
  await s.create('/big');
  await Promise.all([s.create('/h1', half), s.create('/h2', half)]);
  for (let i = 0; i < 30; i++) await s.create(`/n${i}`, Buffer.from(`v${i}`));
  const ops: Promise<unknown>[] = [];
  const small: Promise<{ data: Buffer }>[] = [];
  ops.push(s.setData('/big', big));
  for (let i = 0; i < 3000; i++) small.push(s.getData(`/n${i % 30}`));
  const multiRead = s.readMulti([
    { op: 'getData', path: '/h1' },
    { op: 'getData', path: '/h2' },
  ] as const);
  const bigBack = s.getData('/big');
  await Promise.all(ops);
  const datas = await Promise.all(small);
  for (const [i, d] of datas.entries()) assert.equal(d.data.toString(), `v${i % 30}`);
  const [h1, h2] = await multiRead;
  assert.ok(h1.ok && h2.ok && h1.data.equals(half) && h2.data.equals(half));
  assert.ok((await bigBack).data.equals(big));
});

test('digest auth: a burst of creates under the creator ACL, cut in the middle, every node readable after', {}, async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, { auth: 'bob:pw', connectionString: proxy.connectionString, sessionTimeout: 20_000 });
  await s.create('/p');
  const results = await Promise.allSettled(
    Array.from({ length: 300 }, (_, i) => {
      if (i === 150) setImmediate(() => proxy.cut());
      return s.create(`/p/c${i}`, Buffer.from(String(i)));
    }),
  );
  proxy.restore();
  const names = new Set(await s.getChildren('/p'));
  for (const [i, r] of results.entries()) {
    if (r.status === 'fulfilled') assert.ok(names.has(`c${i}`), `c${i} resolved but missing`);
  }
  for (const n of names) assert.equal((await s.getData(`/p/${n}`)).data.toString(), n.slice(1));
});
