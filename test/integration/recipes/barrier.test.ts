import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AbortedError,
  Barrier,
  DoubleBarrier,
  InvalidArgumentError,
  SessionExpiredError,
  TimeoutError,
} from '@zkq/core';
import { expire, sessionsOn, watchedPaths } from '../../fixtures/recipes/helpers.js';
import { sessionToGiveUp } from '../../helpers/given-up-session.js';
import { testSession, waitFor } from '../../helpers/zk.js';

/** Enters `barrier` in the background, recording when it passes. */
function entering(barrier: Barrier) {
  const state = { passed: false };
  const done = barrier.enter({ timeout: 60_000 }).then(() => {
    state.passed = true;
  });
  done.catch(() => undefined); // handled here too: some tests expect a rejection and await it later
  return { state, done };
}

test('barrier: nobody passes with size-1 members; all pass with size', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const barriers = sessions.map((s, i) => new Barrier(s, '/barrier', { size: 3, id: `m${i}` }));
  const first = [entering(barriers[0]!), entering(barriers[1]!)];
  await waitFor(async () => (await barriers[0]!.members()).length === 2, { what: 'two members' });
  await waitFor(() => barriers.slice(0, 2).every((b) => b.stats.watches === 1), { what: 'both waiting' });
  assert.equal(await sessions[0]!.exists('/barrier/start'), null);
  assert.ok(first.every((e) => !e.state.passed));

  const last = entering(barriers[2]!);
  await Promise.all([...first, last].map((e) => e.done));
  assert.ok(await sessions[0]!.exists('/barrier/start'));
  assert.throws(() => new Barrier(sessions[0]!, '/b', { size: 0 }), InvalidArgumentError);
});

test('barrier: members that die before the start do not count', async (t) => {
  const { sessions } = await sessionsOn(t, 5);
  const make = (i: number) => new Barrier(sessions[i]!, '/barrier', { size: 3, id: `m${i}` });
  const closed = entering(make(0));
  const expired = entering(make(1));
  await waitFor(async () => (await make(4).members()).length === 2, { what: 'two members' });
  await sessions[0]!.close();
  await assert.rejects(closed.done);
  await expire(sessions[1]!);
  await assert.rejects(expired.done, { code: 'ZK_SESSION_EXPIRED' });
  await waitFor(async () => (await make(4).members()).length === 0, { what: 'dead members gone' });

  const alive = [entering(make(2)), entering(make(3))];
  await waitFor(async () => (await make(4).members()).length === 2, { what: 'two live members' });
  assert.equal(await sessions[4]!.exists('/barrier/start'), null);
  assert.ok(alive.every((e) => !e.state.passed));
  const third = entering(make(4));
  await Promise.all([...alive, third].map((e) => e.done));
});

test('barrier: timeout and abort remove the member; reset allows another round', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new Barrier(sessions[0]!, '/barrier', { size: 2 });
  await assert.rejects(a.enter({ timeout: 300 }), TimeoutError);
  assert.deepEqual(await a.members(), []);
  const controller = new AbortController();
  const aborted = a.enter({ signal: controller.signal });
  await waitFor(async () => (await a.members()).length === 1, { what: 'member node' });
  controller.abort();
  await assert.rejects(aborted, AbortedError);
  assert.deepEqual(await a.members(), []);

  const b = new Barrier(sessions[1]!, '/barrier', { size: 2 });
  await Promise.all([a.enter({ timeout: 30_000 }), b.enter({ timeout: 30_000 })]);
  await Promise.all([a.leave(), b.leave()]);
  await a.reset();
  const again = entering(a);
  await waitFor(() => a.stats.watches === 2, { what: 'waiting in round two' });
  assert.equal(again.state.passed, false, 'a reset barrier does not pass one member');
  await b.enter({ timeout: 30_000 });
  await again.done;
});

test('double barrier: leave resolves only once every member has left, and resets', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const barriers = sessions.map((s) => new DoubleBarrier(s, '/double', { size: 3 }));
  await Promise.all(barriers.map((b) => b.enter({ timeout: 30_000 })));
  const before = barriers[0]!.stats.watches + barriers[1]!.stats.watches;
  const left = [false, false, false];
  const leaving = [0, 1].map((i) =>
    barriers[i]!.leave({ timeout: 60_000 }).then(() => {
      left[i] = true;
    }),
  );
  await waitFor(() => barriers[0]!.stats.watches + barriers[1]!.stats.watches >= before + 2, {
    what: 'two leavers waiting',
  });
  assert.deepEqual(left, [false, false, false]);
  assert.ok((await barriers[2]!.members()).length >= 1);
  await barriers[2]!.leave({ timeout: 60_000 });
  left[2] = true;
  await Promise.all(leaving);
  assert.deepEqual(await barriers[0]!.members(), []);
  assert.equal(await sessions[0]!.exists('/double/start'), null, 'the last member resets the barrier');
});

test('double barrier: after many rounds no watch is left on the server', async (t) => {
  const { namespace, sessions } = await sessionsOn(t, 3);
  for (let round = 0; round < 8; round++) {
    const barriers = sessions.map((s) => new DoubleBarrier(s, '/double', { size: 3 }));
    await Promise.all(barriers.map((b) => b.enter({ timeout: 30_000 })));
    await Promise.all(barriers.map((b) => b.leave({ timeout: 30_000 })));
  }
  assert.deepEqual(await sessions[0]!.getChildren('/double'), []);
  assert.deepEqual(await watchedPaths(namespace), []);
});

test('barrier: a join whose create was applied, its reply lost with its session, counts once on the new session', async (t) => {
  const { session: s, observer, loseRepliesNow } = await sessionToGiveUp(t);
  await observer.ensurePath('/b');
  const m0 = new Barrier(s, '/b', { size: 2, id: 'm0' });
  const m1 = new Barrier(observer, '/b', { size: 2, id: 'm1' });
  // The create reaches the server; its reply and every later one are lost, then the link: the node
  // of the first create outlives the session the client gave up, into its new one.
  loseRepliesNow();
  let entered = false;
  const entering = m0.enter({ timeout: 60_000 }).then(() => {
    entered = true;
  });
  await waitFor(async () => (await observer.getChildren('/b')).length === 1, { what: 'the create applied' });
  const owners = async () =>
    Promise.all(
      (await observer.getChildren('/b'))
        .filter((n) => n.startsWith('member-'))
        .map(async (n) => (await observer.exists(`/b/${n}`))?.ephemeralOwner),
    );
  const first = (await owners())[0];
  await waitFor(async () => (await owners()).includes(s.sessionId) && s.sessionId !== first, {
    what: "m0's node on its new session",
    timeoutMs: 30_000,
  });
  // one member, counted once: it waits
  assert.equal(await observer.exists('/b/start'), null, 'passed with one member');
  assert.equal(entered, false);
  assert.deepEqual(await owners(), [s.sessionId]);
  await m1.enter({ timeout: 30_000 });
  await entering;
});

test('barrier: a member whose session is given up while it counts the members rejects, and leaves no node to count', async (t) => {
  const { session: s, observer, loseRepliesFrom } = await sessionToGiveUp(t);
  const other = await testSession(t, { namespace: s.namespace });
  await observer.ensurePath('/b');
  const m0 = new Barrier(s, '/b', { size: 2, id: 'm0' });
  // The node is made; the look for `start` is sent, its reply and every later one are lost, then
  // the link: the server keeps the node of the session given up a while longer, then expires it.
  // Read on the new session, the count holds that node: a member waiting on it waits for one
  // member too many once it goes, and with `size` members in all nobody would ever pass.
  loseRepliesFrom('exists', '/b/start');
  await assert.rejects(m0.enter({ timeout: 30_000 }), SessionExpiredError);
  // no node of m0 left to count: two members that enter now pass together, not one alone
  await waitFor(async () => (await observer.getChildren('/b')).length === 0, { what: "m0's node gone" });
  const m1 = new Barrier(observer, '/b', { size: 2, id: 'm1' });
  const m2 = new Barrier(other, '/b', { size: 2, id: 'm2' });
  const first = m1.enter({ timeout: 30_000 });
  await waitFor(async () => (await observer.getChildren('/b')).length === 1, { what: 'm1 in' });
  assert.equal(await observer.exists('/b/start'), null, 'passed with one member');
  await Promise.all([first, m2.enter({ timeout: 30_000 })]);
});
