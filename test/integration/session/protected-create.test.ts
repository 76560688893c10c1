/**
 * A connection cut in the middle of a sequential create: the request reaches
 * the server, the reply is lost. createProtected finds its own node; a plain
 * sequential create cannot tell, so it must say the outcome is unknown.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError, isOutcomeUnknown } from '@zkq/core';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { testSession, waitFor } from '../../helpers/zk.js';

async function setup(t: Parameters<typeof testSession>[0]) {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, {
    connectionString: proxy.connectionString,
    sessionTimeout: 15_000,
    requestTimeout: 30_000,
  });
  // Sees the server directly, past the proxy.
  const observer = await testSession(t, { namespace: s.namespace });
  await s.create('/q');
  return { proxy, s, observer };
}

test('createProtected: a lost reply and a cut connection leave exactly one node, which it returns', async (t) => {
  const { proxy, s, observer } = await setup(t);
  proxy.dropReplies();
  const pending = s.createProtected('/q/job-', Buffer.from('payload'));
  // The create reached the server and was applied; its reply was dropped.
  await waitFor(async () => (await observer.getChildren('/q')).length === 1, { what: 'the node on the server' });
  proxy.cut();
  proxy.restore();
  const path = await pending;
  const children = await observer.getChildren('/q');
  assert.equal(children.length, 1);
  assert.equal(`/q/${children[0]}`, path);
  assert.equal((await observer.getData(path)).data.toString(), 'payload');
  assert.equal(s.state, 'reconnected');
});

test('createProtected: after an unknown outcome it syncs the parent before it looks for its own node', async (t) => {
  const { proxy, s, observer } = await setup(t);
  const calls: string[] = [];
  const { sync, getChildren } = s;
  s.sync = (path) => {
    calls.push(`sync ${path}`);
    return sync.call(s, path);
  };
  s.getChildren = (path, options) => {
    calls.push(`getChildren ${path}`);
    return getChildren.call(s, path, options);
  };
  proxy.dropReplies();
  const pending = s.createProtected('/q/job-', Buffer.from('payload'), 'ephemeral_sequential');
  await waitFor(async () => (await observer.getChildren('/q')).length === 1, { what: 'the node on the server' });
  proxy.cut();
  proxy.restore();
  const path = await pending;
  assert.deepEqual(await observer.getChildren('/q'), [path.slice('/q/'.length)]);
  assert.deepEqual(calls.slice(0, 2), ['sync /q', 'getChildren /q'], calls.join(', '));
});

test('plain sequential create under the same fault: rejects as outcome-unknown, is not re-sent', async (t) => {
  const { proxy, s, observer } = await setup(t);
  proxy.dropReplies();
  const pending = s.create('/q/job-', Buffer.from('payload'), 'persistent_sequential');
  await waitFor(async () => (await observer.getChildren('/q')).length === 1, { what: 'the node on the server' });
  proxy.cut();
  proxy.restore();
  await assert.rejects(pending, (err: unknown) => {
    assert.ok(err instanceof ConnectionLossError, String(err));
    assert.equal(isOutcomeUnknown(err), true);
    assert.equal(err.path, '/q/job-');
    return true;
  });
  // The caller cannot know the node's name: this is what createProtected is for.
  await s.getChildren('/q'); // connected again
  assert.equal((await observer.getChildren('/q')).length, 1, 'the create was not silently re-sent');
});

test('createProtected: an ephemeral node another session holds under its marker is not taken as its own, and is deleted', async (t) => {
  const s = await testSession(t);
  const other = await testSession(t, { namespace: s.namespace });
  await s.create('/q');
  // As after a retry that moved to a new session: the first create was applied for a session
  // that is not this one any more (it still lives until it expires), and its reply was lost.
  const { create } = s;
  let first = true;
  s.create = async (path, data, mode) => {
    if (!first) return create.call(s, path, data, mode);
    first = false;
    await other.create(path, data, mode);
    throw new ConnectionLossError(path);
  };
  const path = await s.createProtected('/q/lock-', undefined, 'ephemeral_sequential');
  const stat = await other.exists(path);
  assert.equal(stat?.ephemeralOwner, s.sessionId, 'the node returned belongs to this session');
  // that session's node is this call's, made for a session given up: beside the new one it would count twice
  assert.deepEqual(await other.getChildren('/q'), [path.slice('/q/'.length)]);
});
