/**
 * A holder whose event loop is blocked (a long synchronous computation) for
 * longer than its session timeout: it sends nothing, not even the wire
 * client's pings, so the server expires its session and hands the lock and
 * the leadership to another. The moment the loop is free again, before any
 * timer of the heartbeat has run, `isHeld` and `isLeader` must already be
 * false: code that checks them right after its work must not act on a lock
 * another holds.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { LeaderElection, Lock } from '@zkq/core';
import { sessionsOn, spawnFixture } from '../../fixtures/recipes/helpers.js';
import { waitFor } from '../../helpers/zk.js';

type Ctx = { after(fn: () => unknown): void; name?: string };

async function blockedHolder(t: Ctx, sessionTimeout: number): Promise<void> {
  const { namespace, sessions } = await sessionsOn(t, 1, sessionTimeout);
  const observer = sessions[0]!;
  const dir = mkdtempSync(join(tmpdir(), 'zkq-blocked-holder-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const flag = join(dir, 'flag');
  const holder = await spawnFixture(t, 'lock-client.ts', [namespace, '/lock', 'busy', String(sessionTimeout), flag]);
  await waitFor(() => holder.output().includes('acquired'), { what: 'the holder acquiring', timeoutMs: 60_000 });
  // the holder is blocked now; the lock and the leadership pass once the server expires its session
  const lock = new Lock(observer, '/lock', { id: 'next' });
  const election = new LeaderElection(observer, '/lock-election', { id: 'next' });
  const patience = { timeout: sessionTimeout * 4 + 30_000 };
  await Promise.all([lock.acquire(patience), election.start()]);
  await election.waitUntilLeader(patience);
  assert.ok(lock.isHeld && election.isLeader);
  writeFileSync(flag, '');
  await waitFor(() => /after-block .*\n/.exec(holder.output()), {
    what: 'the holder running again',
    timeoutMs: 60_000,
  });
  const line = /after-block [^\n]*/.exec(holder.output())?.[0];
  assert.equal(line, 'after-block held=false leader=false', `session of ${sessionTimeout} ms: another holds and leads`);
  await election.close();
  await lock.release();
}

test('lock, election: a holder blocked past its session timeout claims neither once it runs again (4 and 8 s sessions)', async (t) => {
  await Promise.all([4000, 8000].map((sessionTimeout) => blockedHolder(t, sessionTimeout)));
});
