/**
 * A participant's node outlives a create that the server applied but whose
 * reply never came (the join failed), for as long as its session lives.
 * Joining again on that session would put the new node behind the old one:
 * nobody would ever lead. The participant removes its own leftovers before
 * it joins again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElection } from '@zkq/core';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { nextEvent, testSession } from '../../helpers/zk.js';

test('election: a node whose create was applied but not answered does not hold up the next join', async (t) => {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const session = await testSession(t, {
    connectionString: proxy.connectionString,
    sessionTimeout: 20_000,
    requestTimeout: 300,
    retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 10 },
  });
  const observer = await testSession(t, { namespace: session.namespace });
  await observer.create('/election');
  const election = new LeaderElection(session, '/election', { id: 'p' });
  t.after(() => election.close());

  // the create reaches the server, its reply (and every later one) is lost: the join fails
  proxy.dropReplies();
  await assert.rejects(election.start());
  assert.equal((await observer.getChildren('/election')).length, 1, 'the create was applied');
  const reconnected = nextEvent(session, 'reconnected', 30_000);
  proxy.cut();
  proxy.restore();
  assert.deepEqual(await reconnected, [{ newSession: false }]);

  await election.start();
  await election.waitUntilLeader({ timeout: 10_000 });
  assert.equal((await observer.getChildren('/election')).length, 1, 'the leftover is gone');
});
