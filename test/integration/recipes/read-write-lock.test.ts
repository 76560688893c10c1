import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadWriteLock, TimeoutError } from '@zkq/core';
import { sessionsOn } from '../../fixtures/recipes/helpers.js';
import { waitFor } from '../../helpers/zk.js';

test('read/write lock: readers share, writers are exclusive', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const [r1, r2, w] = sessions.map((s) => new ReadWriteLock(s, '/rw')) as [ReadWriteLock, ReadWriteLock, ReadWriteLock];
  await r1.readLock.acquire({ timeout: 10_000 });
  await r2.readLock.acquire({ timeout: 10_000 }); // overlaps with r1
  assert.ok(r1.readLock.isHeld && r2.readLock.isHeld);
  assert.equal(await w.writeLock.tryAcquire(), false);
  await assert.rejects(w.writeLock.acquire({ timeout: 300 }), TimeoutError);
  await r1.readLock.release();
  await r2.readLock.release();
  await w.writeLock.acquire({ timeout: 10_000 });
  assert.equal(await r1.readLock.tryAcquire(), false, 'a reader waits for a holding writer');
  const other = new ReadWriteLock(sessions[0]!, '/rw');
  assert.equal(await other.writeLock.tryAcquire(), false, 'writers exclude each other');
  await w.writeLock.release();
  assert.equal(await r1.readLock.tryAcquire(), true);
  await r1.readLock.release();
  assert.deepEqual(await sessions[0]!.getChildren('/rw'), []);
});

test('read/write lock: arrival order is kept (a reader after a waiting writer waits)', async (t) => {
  const { sessions } = await sessionsOn(t, 3);
  const [a, b, c] = sessions.map((s) => new ReadWriteLock(s, '/rw')) as [ReadWriteLock, ReadWriteLock, ReadWriteLock];
  const events: string[] = [];
  await a.readLock.acquire();
  events.push('r1');
  const writer = b.writeLock.acquire({ timeout: 60_000 }).then(() => events.push('w'));
  await waitFor(() => b.writeLock.stats.watches === 1, { what: 'writer waiting' });
  const reader = c.readLock.acquire({ timeout: 60_000 }).then(() => events.push('r2'));
  await waitFor(() => c.readLock.stats.watches === 1, { what: 'late reader waiting behind the writer' });
  assert.deepEqual(events, ['r1']);

  await a.readLock.release();
  await writer;
  assert.deepEqual(events, ['r1', 'w']);
  assert.equal(c.readLock.isHeld, false);
  assert.equal(c.readLock.stats.wakeups, 0, 'the late reader watches the writer, not the first reader');

  await b.writeLock.release();
  await reader;
  assert.deepEqual(events, ['r1', 'w', 'r2']);
  await c.readLock.release();
});
