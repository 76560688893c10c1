import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CreateMode, GroupMembership, MemberExistsError, type Session } from '@zkq/core';
import { sharedZooKeeper } from '@zkq/testing';
import { expire, STEADY_SESSION_TIMEOUT_MS, sessionsOn } from '../../fixtures/recipes/helpers.js';
import { FaultProxy, OP, request } from '../../helpers/fault-proxy.js';
import { testSession, waitFor } from '../../helpers/zk.js';

test('membership: members follow joins and leaves', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new GroupMembership(sessions[0]!, '/group', { id: 'a', data: Buffer.from('A') });
  const b = new GroupMembership(sessions[1]!, '/group', { id: 'b', data: Buffer.from('B') });
  const changes: string[][] = [];
  a.on('change', (members) => changes.push(members));
  await a.join();
  assert.deepEqual(a.current, ['a']);
  await b.join();
  await waitFor(() => a.current.length === 2, { what: 'a sees b' });
  assert.deepEqual(a.current, ['a', 'b']);
  assert.deepEqual(
    (await a.members()).map((m) => [m.id, m.data.toString()]),
    [
      ['a', 'A'],
      ['b', 'B'],
    ],
  );
  await b.leave();
  await waitFor(() => a.current.length === 1, { what: 'a sees b leave' });
  assert.deepEqual(changes, [['a'], ['a', 'b'], ['a']]);

  const impostor = new GroupMembership(sessions[1]!, '/group', { id: 'a' });
  await assert.rejects(impostor.join(), MemberExistsError);
});

test('membership: a member re-joins after its session expires', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new GroupMembership(sessions[0]!, '/group', { id: 'a' });
  const b = new GroupMembership(sessions[1]!, '/group', { id: 'b' });
  await a.join();
  await b.join();
  await waitFor(() => b.current.length === 2, { what: 'b sees a' });
  const bSawLeave = new Promise<void>((resolve) => {
    b.on('change', (m) => m.length === 1 && resolve());
  });
  await expire(sessions[0]!);
  await bSawLeave;
  await waitFor(() => b.current.length === 2, { what: 'a back in the group', timeoutMs: 30_000 });
  const stat = await sessions[1]!.exists('/group/a');
  assert.equal(BigInt(`0x${stat!.ephemeralOwner}`), BigInt(`0x${sessions[0]!.sessionId}`));
  // a's own view is live again on its new session.
  const c = new GroupMembership(sessions[1]!, '/group', { id: 'c' });
  await c.join();
  await waitFor(() => a.current.includes('c'), { what: 'a sees c after its expiry' });
});

test('membership: a member that leaves while it re-joins on a new session leaves no node behind', async (t) => {
  const { sessions } = await sessionsOn(t, 2, STEADY_SESSION_TIMEOUT_MS);
  const [s, other] = sessions as [Session, Session];
  const a = new GroupMembership(s, '/group', { id: 'a' });
  await a.join();
  // the re-join's create on the new session is answered only once the member has left
  let answerCreate!: () => void;
  const createAnswerable = new Promise<void>((resolve) => {
    answerCreate = resolve;
  });
  let created: Promise<unknown> | undefined;
  const createOn = s.create.bind(s);
  s.create = (path: string, data?: Buffer, mode?: CreateMode) => {
    if (path !== '/group/a') return createOn(path, data, mode);
    created = createAnswerable.then(() => createOn(path, data, mode));
    return created as Promise<string>;
  };
  await expire(s);
  await waitFor(() => created !== undefined, { what: "the re-join's create sent" });
  await a.leave();
  answerCreate();
  await created?.catch(() => undefined);
  // a node made after the leave would stay for as long as the session lives: a member nobody is
  await waitFor(async () => (await other.exists('/group/a')) === null, { what: 'no member a', timeoutMs: 10_000 });
  assert.deepEqual(await other.getChildren('/group'), []);
});

test("membership: leave() of a member refused its id leaves the holder's node alone", async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const [s, other] = sessions as [Session, Session];
  const a = new GroupMembership(s, '/group', { id: 'a' });
  await a.join();
  const impostor = new GroupMembership(other, '/group', { id: 'a' });
  await assert.rejects(impostor.join(), MemberExistsError);
  await impostor.leave(); // as a cleanup in a finally would
  const stat = await other.exists('/group/a');
  assert.equal(stat?.ephemeralOwner, s.sessionId, "a's node was deleted by a member that never held it");
});

test('membership: a join whose create was applied and its reply lost is a member, or no node is left', async (t) => {
  const proxy = await FaultProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const s = await testSession(t, {
    connectionString: proxy.connectionString,
    sessionTimeout: STEADY_SESSION_TIMEOUT_MS,
  });
  const other = await testSession(t, { namespace: s.namespace });
  await other.ensurePath('/group');
  const a = new GroupMembership(s, '/group', { id: 'a' });
  // the create reaches the server; its reply is lost with the connection, the same session comes back
  const lost = proxy.loseReply(request(OP.create, '/group/a'));
  const joined = await a.join().then(
    () => true,
    () => false,
  );
  assert.ok(lost.hasFired, "the create's reply was not lost");
  const node = await other.exists('/group/a');
  if (joined) {
    assert.equal(node?.ephemeralOwner, s.sessionId, 'joined, but not in the group');
    await waitFor(() => a.current.includes('a'), { what: 'a in its own list' });
  } else {
    // refused: a node left would be a member nobody is, for as long as the session lives
    assert.equal(node, null, 'a member that did not join is in the group');
  }
  await a.leave();
  assert.equal(await other.exists('/group/a'), null);
});

test("membership: a second member of the same id on the same session is refused, and its leave leaves the holder's node", async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const [s, other] = sessions as [Session, Session];
  const a = new GroupMembership(s, '/group', { id: 'a' });
  await a.join();
  const twin = new GroupMembership(s, '/group', { id: 'a' });
  await assert.rejects(twin.join(), MemberExistsError);
  await twin.leave(); // as a cleanup in a finally would
  assert.equal((await other.exists('/group/a'))?.ephemeralOwner, s.sessionId, "a's node was deleted by its twin");
  await a.leave();
  // the id is free again for another object of the session
  await twin.join();
  assert.equal((await other.exists('/group/a'))?.ephemeralOwner, s.sessionId);
  await twin.leave();
  assert.equal(await other.exists('/group/a'), null);
});
