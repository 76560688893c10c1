/**
 * A participant waiting for its turn watches its predecessor. A watch can be
 * lost with a connection (a server restarted, a reply torn as its connection
 * died): then the deletion it waits for never arrives. After every
 * reconnection a waiting participant looks again and watches again, so a
 * lost watch holds it up no longer than the next reconnection.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElection, type Session } from '@zkq/core';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { nextEvent, testSession, waitFor } from '../../helpers/zk.js';

test('election: a follower whose watch was lost looks again after a reconnection and takes over', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const leaderSession = await testSession(t, { sessionTimeout: 4000 });
  const follower = await testSession(t, {
    namespace: leaderSession.namespace,
    connectionString: proxy.connectionString,
    sessionTimeout: 4000,
  });
  const first = new LeaderElection(leaderSession, '/election', { id: 'first' });
  t.after(() => first.close());
  await first.start();
  await waitFor(() => first.isLeader, { what: 'the first leader' });

  // the follower's watches on the leader's node are never delivered (as if lost with a connection)
  const getData = follower.getData.bind(follower);
  let swallowed = 0;
  follower.getData = ((path: string, options: Parameters<Session['getData']>[1] = {}) => {
    if (!options.watch) return getData(path, options);
    swallowed++;
    return getData(path, { ...options, watch: () => {} });
  }) as Session['getData'];
  const second = new LeaderElection(follower, '/election', { id: 'second' });
  t.after(() => second.close());
  await second.start();
  await waitFor(() => swallowed > 0, { what: 'the follower to watch the leader' });
  follower.getData = getData;

  await first.resign();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(second.isLeader, false, 'its watch was lost: nothing told it');

  // a short cut: the same session comes back, and the follower looks again
  const reconnected = nextEvent(follower, 'reconnected', 30_000);
  proxy.cut();
  await new Promise((r) => setTimeout(r, 200));
  proxy.restore();
  await reconnected;
  await waitFor(() => second.isLeader, { what: 'the follower to take over after the reconnection' });
});
