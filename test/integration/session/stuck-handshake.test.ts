/**
 * A reconnection whose handshake is never answered (a connection accepted
 * with nothing behind it: a proxy or balancer whose server is down or still
 * starting) is given up after a third of the session timeout and tried
 * again, so the session resumes. The wire client bounds the TCP connect
 * only: the session waited on the stuck attempt until it declared itself
 * lost, a session timeout later.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { sharedZooKeeper, uniqueRoot } from '@zkq/testing';
import { FaultProxy } from '../../helpers/fault-proxy.js';
import { waitFor } from '../../helpers/zk.js';

const SESSION_MS = 6000;

test('a reconnection whose handshake is never answered is tried again, and the session resumes', {
  timeout: 60_000,
}, async (t) => {
  const proxy = await FaultProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const session = await Session.connect({
    connectionString: proxy.connectionString,
    namespace: uniqueRoot('stuck-handshake'),
    sessionTimeout: SESSION_MS,
  });
  t.after(() => session.close());
  await session.create('/mine', undefined, 'ephemeral');
  const id = session.sessionId;
  const states: string[] = [];
  for (const state of ['suspended', 'reconnected', 'lost'] as const) session.on(state, () => states.push(state));

  proxy.swallowHandshakes(1);
  proxy.dropConnections();
  await waitFor(() => states.includes('reconnected') || states.includes('lost'), {
    what: 'the session back, or lost',
    timeoutMs: 30_000,
  });
  assert.deepEqual(states, ['suspended', 'reconnected'], 'resumed without being lost');
  assert.equal(session.sessionId, id, 'the same session');
  assert.ok(await session.exists('/mine'), 'its ephemeral node kept');
});
