import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AbortedError, InvalidArgumentError, Lock, SessionExpiredError, TimeoutError } from '@zkq/core';
import { exclusiveDriver, type LockDriver } from '@zkq/core/internal';
import { expire, sessionsOn, spawnFixture, watchedPaths } from '../../fixtures/recipes/helpers.js';
import { sessionToGiveUp } from '../../helpers/given-up-session.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';

test('lock: mutual exclusion across processes under contention', async (t) => {
  const { namespace, sessions } = await sessionsOn(t, 1);
  const [s] = sessions as [(typeof sessions)[0]];
  await s.create('/counter', Buffer.from('0'));
  const processes = 3;
  const iterations = 12;
  const children = await Promise.all(
    Array.from({ length: processes }, () =>
      spawnFixture(t, 'lock-client.ts', [namespace, '/lock', 'counter', String(iterations)]),
    ),
  );
  for (const child of children) {
    const code = await child.exited;
    assert.equal(code, 0, `contender failed: ${child.output()}`);
  }
  const { data } = await s.getData('/counter');
  assert.equal(Number(data.toString()), processes * iterations);
  assert.deepEqual(await s.getChildren('/lock'), []);
});

test('lock: each release wakes exactly one waiter, in arrival order', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const holder = new Lock(sessions[0]!, '/lock', { id: 'holder' });
  await holder.acquire();
  const waiters = Array.from({ length: 5 }, (_, i) => new Lock(sessions[i % 2]!, '/lock', { id: `w${i}` }));
  const order: number[] = [];
  const acquiring = waiters.map(async (w, i) => {
    await w.acquire({ timeout: 60_000 });
    order.push(i);
  });
  // Queue them in a known order: each waiter's node exists before the next one starts waiting.
  await waitFor(async () => (await sessions[0]!.getChildren('/lock')).length === 6, { what: 'all waiters queued' });
  await waitFor(() => waiters.every((w) => w.stats.watches === 1), { what: 'every waiter watching' });
  assert.equal(await holder.holder(), 'holder');

  let previous: Lock = holder;
  for (let k = 0; k < waiters.length; k++) {
    await previous.release();
    await waitFor(() => order.length === k + 1, { what: `waiter ${k + 1} to acquire`, timeoutMs: 30_000 });
    const wakeups = waiters.map((w) => w.stats.wakeups);
    assert.equal(
      wakeups.reduce((a, b) => a + b, 0),
      k + 1,
      `release ${k + 1} woke more than one waiter: ${wakeups}`,
    );
    previous = waiters[order[k]!]!;
    assert.ok(previous.isHeld);
  }
  await previous.release();
  await Promise.all(acquiring);
  assert.deepEqual(
    waiters.map((w) => w.stats.wakeups),
    [1, 1, 1, 1, 1],
  );
  assert.equal(new Set(order).size, 5);
});

test('lock: tryAcquire, isHeld and release', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new Lock(sessions[0]!, '/lock');
  const b = new Lock(sessions[1]!, '/lock');
  assert.equal(await a.tryAcquire(), true);
  assert.equal(a.isHeld, true);
  assert.equal(await b.tryAcquire(), false);
  assert.equal(b.isHeld, false);
  assert.equal((await sessions[0]!.getChildren('/lock')).length, 1, 'a failed tryAcquire leaves no node');
  await a.release();
  assert.equal(a.isHeld, false);
  assert.equal(await b.tryAcquire(), true);
  await b.release();
  await assert.rejects(a.acquire({ timeout: -1 }), InvalidArgumentError);
  assert.throws(() => new Lock(sessions[0]!, 'no-slash'), InvalidArgumentError);
});

test('lock: a timed-out or aborted waiter leaves no node behind', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const holder = new Lock(sessions[0]!, '/lock');
  await holder.acquire();
  const waiter = new Lock(sessions[1]!, '/lock');
  await assert.rejects(waiter.acquire({ timeout: 300 }), TimeoutError);
  assert.equal((await sessions[0]!.getChildren('/lock')).length, 1);

  const controller = new AbortController();
  const aborted = waiter.acquire({ signal: controller.signal });
  await waitFor(async () => (await sessions[0]!.getChildren('/lock')).length === 2, { what: 'waiter queued' });
  controller.abort();
  await assert.rejects(aborted, AbortedError);
  assert.equal((await sessions[0]!.getChildren('/lock')).length, 1);
  await assert.rejects(waiter.acquire({ signal: AbortSignal.abort() }), AbortedError);
  assert.equal((await sessions[0]!.getChildren('/lock')).length, 1);
  await holder.release();
  await waiter.acquire({ timeout: 30_000 });
  assert.ok(waiter.isHeld);
});

test('lock: a holder killed with SIGKILL lets the next waiter in', async (t) => {
  const { namespace, sessions } = await sessionsOn(t, 1);
  const child = await spawnFixture(t, 'lock-client.ts', [namespace, '/lock', 'hold']);
  await waitFor(() => child.output().includes('acquired'), { what: 'child to acquire', timeoutMs: 60_000 });
  const waiter = new Lock(sessions[0]!, '/lock');
  const acquiring = waiter.acquire({ timeout: 60_000 });
  await waitFor(() => waiter.stats.watches === 1, { what: 'waiter watching' });
  child.child.kill('SIGKILL');
  await acquiring;
  assert.ok(waiter.isHeld);
});

test('lock: a holder whose session expires reports lost and lets the next waiter in', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const holder = new Lock(sessions[0]!, '/lock');
  await holder.acquire();
  const waiter = new Lock(sessions[1]!, '/lock');
  const acquiring = waiter.acquire({ timeout: 60_000 });
  await waitFor(() => waiter.stats.watches === 1, { what: 'waiter watching' });
  const lost = nextEvent(holder, 'lost', 60_000);
  await expire(sessions[0]!);
  await acquiring;
  await lost;
  assert.equal(holder.isHeld, false);
  assert.ok(waiter.isHeld);
  // The holder's session layer built a new session; the old node is gone for good.
  await waitFor(() => sessions[0]!.state === 'reconnected', { what: 'new session', timeoutMs: 30_000 });
  assert.equal(holder.isHeld, false);
});

/** The exclusive driver, except that the first decision watches `gone`: a predecessor already deleted. */
function watchingGone(gone: string): LockDriver {
  let first = true;
  return {
    participates: exclusiveDriver.participates,
    decide(sorted, own) {
      if (!first) return exclusiveDriver.decide(sorted, own);
      first = false;
      return { proceed: false, watch: gone };
    },
  };
}

test('lock: a predecessor already gone when the waiter looks leaves no watch on the server', async (t) => {
  const { namespace, sessions } = await sessionsOn(t, 2);
  for (let i = 0; i < 20; i++) {
    const first = new Lock(sessions[0]!, '/lock');
    await first.acquire();
    const gone = first.nodePath!.slice('/lock/'.length);
    await first.release();
    const next = new Lock(sessions[1]!, '/lock', {}, watchingGone(gone));
    await next.acquire({ timeout: 30_000 });
    assert.equal(next.stats.watches, 0, 'nothing to wait for');
    await next.release();
  }
  assert.deepEqual(await watchedPaths(namespace), []);
});

test('lock: after many contended cycles no watch is left on the server', async (t) => {
  const { namespace, sessions } = await sessionsOn(t, 3);
  const counter = { inside: 0, max: 0 };
  await Promise.all(
    sessions.map(async (s) => {
      for (let i = 0; i < 15; i++) {
        const lock = new Lock(s, '/lock');
        await lock.acquire({ timeout: 60_000 });
        counter.max = Math.max(counter.max, ++counter.inside);
        counter.inside--;
        await lock.release();
      }
    }),
  );
  assert.equal(counter.max, 1);
  assert.deepEqual(await sessions[0]!.getChildren('/lock'), []);
  assert.deepEqual(await watchedPaths(namespace), []);
});

test('lock: an acquire whose session is given up while it looks at the line rejects, though the old node still leads', async (t) => {
  const { session: s, observer, loseRepliesFrom } = await sessionToGiveUp(t);
  await observer.ensurePath('/lock');
  const lock = new Lock(s, '/lock', { id: 'l0' });
  // The node is made; the listing of the line is sent, its reply and every later one are lost,
  // then the link: the server keeps the node of the session given up a while longer, at the head
  // of the line.
  loseRepliesFrom('getChildren', '/lock');
  await assert.rejects(lock.acquire({ timeout: 60_000 }), SessionExpiredError);
  assert.equal(lock.isHeld, false);
  assert.deepEqual(await observer.getChildren('/lock'), [], "the given-up session's node is removed");
});

test('lock: a waiter whose session is given up while it looks at the line rejects at once, not when the holder releases', async (t) => {
  const { session: s, observer, loseRepliesFrom } = await sessionToGiveUp(t);
  const holder = new Lock(observer, '/lock', { id: 'holder' });
  await holder.acquire();
  const lock = new Lock(s, '/lock', { id: 'l0' });
  // as above, but the holder keeps the lock: read again on the new session, the line shows the
  // node of the session given up behind the holder's, and the waiter would wait there with a node
  // the server expires meanwhile, for a turn it no longer has
  loseRepliesFrom('getChildren', '/lock');
  await assert.rejects(lock.acquire({ timeout: 30_000 }), SessionExpiredError);
  assert.equal(holder.isHeld, true);
  await waitFor(async () => (await observer.getChildren('/lock')).length === 1, { what: "the waiter's node gone" });
  await holder.release();
});
