/**
 * Digest auth across a reconnection: requests made while the connection is
 * down wait in the wire client's queue, and on the new connection they must
 * run with the session's identity, as every request before the cut did.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { nextEvent, testSession } from '../../helpers/zk.js';

test('digest auth: reads and creates made while disconnected run authenticated after the reconnection', {}, async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, {
    auth: 'alice:secret',
    connectionString: proxy.connectionString,
    sessionTimeout: 20_000,
  });
  await s.create('/secret', Buffer.from('v'));
  const suspended = nextEvent(s, 'suspended');
  proxy.cut();
  await suspended;
  // Made while the link is down: queued by the wire client until it connects again.
  const read = s.getData('/secret');
  const created = s.create('/made-while-down', Buffer.from('x'));
  await new Promise((r) => setTimeout(r, 300));
  proxy.restore();
  const [r, c] = await Promise.allSettled([read, created]);
  assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
  assert.equal(c.status, 'fulfilled', c.status === 'rejected' ? String(c.reason) : '');
});
