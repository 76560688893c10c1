import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClosedError, NoNodeError, WatchLoop } from '@zkq/core';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { expire, testSession, waitFor } from '../../helpers/zk.js';

test('watch loop: follows every change; a failing read is retried until it succeeds; close stops it', async (t) => {
  const s = await testSession(t);
  const writer = await testSession(t, { namespace: s.namespace });
  const seen: string[] = [];
  const errors: unknown[] = [];
  let reads = 0;
  const loop = new WatchLoop(s, {
    read: async (watch) => {
      reads++;
      return (await s.getData('/node', { watch })).data.toString();
    },
    onRead: (value) => {
      seen.push(value);
    },
    onError: (err) => errors.push(err),
    minDelayMs: 20,
    maxDelayMs: 200,
  });
  t.after(() => loop.close());
  await assert.rejects(loop.start(), NoNodeError); // the first failure goes to the caller...
  await waitFor(() => errors.length >= 2, { what: 'retries' }); // ...and the loop keeps trying
  assert.ok(errors.every((e) => e instanceof NoNodeError));
  await writer.create('/node', Buffer.from('a'));
  await waitFor(() => seen.includes('a'), { what: 'the node once created' });
  for (const value of ['b', 'c', 'd']) {
    await writer.setData('/node', Buffer.from(value));
    await waitFor(() => seen.at(-1) === value, { what: `value ${value}` });
  }
  loop.close();
  const readsAtClose = reads;
  await writer.setData('/node', Buffer.from('e'));
  await writer.delete('/node');
  await writer.sync('/');
  assert.equal(reads, readsAtClose, 'no read after close');
  assert.equal(seen.includes('e'), false);
  assert.equal(loop.closed, true);
});

test('watch loop: keeps following on the new session after an expiry; stops when the session closes', async (t) => {
  const s = await testSession(t);
  const writer = await testSession(t, { namespace: s.namespace });
  await writer.create('/node', Buffer.from('1'));
  let latest = '';
  const loop = new WatchLoop(s, {
    read: (watch) => s.getData('/node', { watch }),
    onRead: ({ data }) => {
      latest = data.toString();
    },
  });
  await loop.start();
  assert.equal(latest, '1');
  await expire(s);
  await writer.setData('/node', Buffer.from('2')); // while no watch is armed
  await waitFor(() => latest === '2', { what: 're-read on the new session' });
  await writer.setData('/node', Buffer.from('3'));
  await waitFor(() => latest === '3', { what: 'the watch armed again' });
  await s.close();
  assert.equal(loop.closed, true);
  await assert.rejects(new WatchLoop(s, { read: async () => 1, onRead: () => undefined }).start(), ClosedError);
});

test('watch loop: an exists-watch follows its node through deletions and creations, also while cut off and after an expiry', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, { connectionString: proxy.connectionString });
  const writer = await testSession(t, { namespace: s.namespace });
  const seen: boolean[] = [];
  const loop = new WatchLoop(s, {
    // on a node that exists, ZooKeeper keeps an exists-watch as a data watch: a deletion fires it
    read: (watch) => s.exists('/node', { watch }),
    onRead: (stat) => {
      seen.push(stat !== null);
    },
  });
  t.after(() => loop.close());
  await loop.start();
  const follows = async (present: boolean, what: string) => {
    await waitFor(() => seen.at(-1) === present, { what, timeoutMs: 10_000 });
    assert.deepEqual(s.armedWatches(), ['exists:/node'], `armed again after ${what}`);
  };
  for (let round = 0; round < 2; round++) {
    await writer.create('/node');
    await follows(true, `created (${round})`);
    await writer.delete('/node');
    await follows(false, `deleted (${round})`);
  }
  // changed while the connection is down: the watch is set again on reconnection, and fires
  proxy.cut();
  await writer.create('/node');
  proxy.restore();
  await follows(true, 'created while cut off');
  proxy.cut();
  await writer.delete('/node');
  proxy.restore();
  await follows(false, 'deleted while cut off');
  // a new session has none of the old watches: the loop arms it again
  await writer.create('/node');
  await follows(true, 'created');
  await expire(s);
  await writer.delete('/node');
  await follows(false, 'deleted after an expiry');
});
