/**
 * BatchBarrier: one name, many batches. Each batch of `size` waits for all
 * its members, whether the members of the batches before it left, died or
 * still run; a member that joins after a batch was released waits for the
 * next one; concurrent completers release one batch once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BarrierInUseError, BatchBarrier, SessionExpiredError, TimeoutError } from '@zkq/core';
import { sessionsOn } from '../../fixtures/recipes/helpers.js';
import { sessionToGiveUp } from '../../helpers/given-up-session.js';
import { testSession, waitFor } from '../../helpers/zk.js';

function entering(barrier: BatchBarrier) {
  const state = { passed: false };
  const done = barrier.enter({ timeout: 60_000 }).then(() => {
    state.passed = true;
  });
  done.catch(() => undefined);
  return { state, done };
}

test('batch barrier: a second batch under the same name waits for all its members, then a third', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const make = (i: number) => new BatchBarrier(sessions[i % 3]!, '/nightly', { size: 2, id: `m${i}` });
  // night 1: both members pass together, then leave
  const night1 = [make(0), make(1)];
  await Promise.all(night1.map((b) => b.enter({ timeout: 30_000 })));
  await Promise.all(night1.map((b) => b.leave()));

  // night 2: the first one waits alone
  const [a, b] = [make(2), make(3)];
  const first = entering(a);
  await waitFor(() => a.stats.watches >= 1, { what: 'the first of night 2 waiting' });
  assert.equal(first.state.passed, false, 'a lone member of the second batch does not pass');
  await b.enter({ timeout: 30_000 });
  await first.done;

  // night 3, while night 2's members still run: they do not count again
  const c = make(4);
  const third = entering(c);
  await waitFor(() => c.stats.watches >= 1, { what: 'the first of night 3 waiting' });
  assert.equal(third.state.passed, false, 'members of a released batch do not count for the next');
  await make(5).enter({ timeout: 30_000 });
  await third.done;
});

test('batch barrier: of three members joining at once for batches of two, two pass and one waits for the next', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const barriers = sessions.map((s, i) => new BatchBarrier(s, '/batch', { size: 2, id: `m${i}` }));
  const entries = barriers.map(entering);
  await waitFor(() => entries.filter((e) => e.state.passed).length === 2, { what: 'one batch of two' });
  const waiter = barriers[entries.findIndex((e) => !e.state.passed)]!;
  await waitFor(() => waiter.stats.watches >= 1, { what: 'the third waiting' });
  assert.equal(entries.filter((e) => e.state.passed).length, 2);
  const late = new BatchBarrier(sessions[0]!, '/batch', { size: 2, id: 'late' });
  await late.enter({ timeout: 30_000 });
  await Promise.all(entries.map((e) => e.done));
});

test('batch barrier: a timed-out member does not count; reset forgets the released batches', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new BatchBarrier(sessions[0]!, '/reset', { size: 2 });
  await assert.rejects(a.enter({ timeout: 300 }), TimeoutError);
  assert.deepEqual(await a.members(), []);
  const b = new BatchBarrier(sessions[1]!, '/reset', { size: 2 });
  await Promise.all([a.enter({ timeout: 30_000 }), b.enter({ timeout: 30_000 })]);
  assert.ok(await sessions[0]!.exists('/reset/released'));
  await Promise.all([a.leave(), b.leave()]);
  await a.reset();
  assert.equal(await sessions[0]!.exists('/reset/released'), null);
  await Promise.all([a.enter({ timeout: 30_000 }), b.enter({ timeout: 30_000 })]);
});

test('batch barrier: reset while members are present is refused; a waiter never passes with a member of a released batch', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const make = (i: number) => new BatchBarrier(sessions[i % 3]!, '/busy', { size: 2, id: `m${i}` });
  // night 1: a and b pass; b leaves, a still runs
  const [a, b] = [make(0), make(1)];
  await Promise.all([a.enter({ timeout: 30_000 }), b.enter({ timeout: 30_000 })]);
  await b.leave();
  // night 2: c waits for its batch
  const c = make(2);
  const waiting = entering(c);
  await waitFor(() => c.stats.watches >= 1, { what: 'c waiting' });
  await assert.rejects(
    c.reset(),
    (err: unknown) => err instanceof BarrierInUseError && err.code === 'ZKQ_BARRIER_IN_USE',
  );
  assert.ok(await sessions[0]!.exists('/busy/released'), 'the released batches are not forgotten');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(waiting.state.passed, false, 'c passed with a member of a released batch');
  const d = make(3);
  await d.enter({ timeout: 30_000 });
  await waiting.done;
  // once everyone left, reset forgets the batches
  await Promise.all([a.leave(), c.leave(), d.leave()]);
  await a.reset();
  assert.equal(await sessions[0]!.exists('/busy/released'), null);
});

test('batch barrier: members joining all at once, while batches are being released, pass in whole batches only (sizes 1 and 3)', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  for (const size of [1, 3]) {
    const path = `/crowd-${size}`;
    const barriers = Array.from(
      { length: 10 },
      (_, i) => new BatchBarrier(sessions[i % 3]!, path, { size, id: `m${i}` }),
    );
    const entries = barriers.map(entering);
    const whole = Math.floor(10 / size) * size;
    await waitFor(() => entries.filter((e) => e.state.passed).length === whole, {
      what: `${whole} passed, size ${size}`,
    });
    const waiters = barriers.filter((_, i) => !entries[i]!.state.passed);
    await waitFor(() => waiters.every((b) => b.stats.watches >= 1), { what: 'the rest waiting' });
    assert.equal(entries.filter((e) => e.state.passed).length, whole, `size ${size}: only whole batches pass`);
    // the passed members are the first in join order: released names the whole-th member
    const released = Number((await sessions[0]!.getData(`${path}/released`)).data.toString());
    const members = await barriers[0]!.members();
    assert.equal(members.length, 10);
    assert.equal(Number(members[whole - 1]!.slice(-10)), released, `size ${size}: ${members.join(' ')}`);
    // the rest complete with late joiners
    const late = Array.from(
      { length: whole + size - 10 },
      (_, i) => new BatchBarrier(sessions[i % 3]!, path, { size, id: `late${i}` }),
    );
    await Promise.all(late.map((b) => b.enter({ timeout: 30_000 })));
    await Promise.all(entries.map((e) => e.done));
  }
});

test('batch barrier: a member whose session is given up while it reads the batches rejects, and leaves no node to count', async (t) => {
  const { session: s, observer, loseRepliesFrom } = await sessionToGiveUp(t);
  const other = await testSession(t, { namespace: s.namespace });
  await observer.ensurePath('/b');
  const m0 = new BatchBarrier(s, '/b', { size: 2, id: 'm0' });
  // The node is made; the read of `released` is sent, its reply and every later one are lost, then
  // the link: read again on the new session, the batch still holds the node of the session given
  // up until the server expires it. Waiting on with no node, the member would pass uncounted with
  // a later batch (one member too many in it).
  loseRepliesFrom('getData', '/b/released');
  await assert.rejects(m0.enter({ timeout: 30_000 }), SessionExpiredError);
  await waitFor(async () => (await observer.getChildren('/b')).filter((n) => n.startsWith('member-')).length === 0, {
    what: "m0's node gone",
  });
  // the next batch is two members that join now
  const m1 = new BatchBarrier(observer, '/b', { size: 2, id: 'm1' });
  const m2 = new BatchBarrier(other, '/b', { size: 2, id: 'm2' });
  await Promise.all([m1.enter({ timeout: 30_000 }), m2.enter({ timeout: 30_000 })]);
});
