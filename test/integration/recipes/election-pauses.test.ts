/**
 * A participant's pauses before joining again (after a failed campaign, after
 * a failed re-join) each last their own time, also when two overlap. The
 * election's pauses run on the global timers, faked here, so that the test
 * decides when each one ends; the session keeps its own timers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaderElection, type Session } from '@zkq/core';
import { expire, STEADY_SESSION_TIMEOUT_MS, sessionsOn } from '../../fixtures/recipes/helpers.js';
import { waitFor } from '../../helpers/zk.js';

/** REJOIN_DELAY_MS of leader-election.ts: the pause after a failed campaign, and after a first failed re-join. */
const PAUSE_MS = 1000;

test("election: a failed campaign's pause ending does not end the failed re-join's pause that began after it", async (t) => {
  const { sessions } = await sessionsOn(t, 2, STEADY_SESSION_TIMEOUT_MS);
  const [s, other] = sessions as [Session, Session];
  // Runs before the election's own hook: the re-join on the new session fails
  // while the election path is an ephemeral node (it cannot have children).
  s.onNewSession(async () => {
    await other.deleteRecursive('/election');
    await other.create('/election', undefined, 'ephemeral');
  });
  const p0 = new LeaderElection(s, '/election', { id: 'p0' });
  const failures: unknown[] = [];
  p0.on('joinFailed', (err) => failures.push(err));
  await p0.start();
  await p0.waitUntilLeader({ timeout: 30_000 });
  const [name] = await other.getChildren('/election');
  const node = `/election/${name}`;
  // the leader's read of its own node after a write to it fails: its campaign fails, and it pauses
  const getDataOn = s.getData.bind(s);
  s.getData = ((path: string, options?: Parameters<Session['getData']>[1]) =>
    path === node ? Promise.reject(new Error('read refused')) : getDataOn(path, options)) as Session['getData'];
  t.mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => t.mock.timers.reset());
  await other.setData(node, Buffer.from('p0'));
  await waitFor(() => failures.length === 1, { what: 'the campaign failed' });
  t.mock.timers.tick(PAUSE_MS / 2);
  // the session expires during the campaign's pause; the re-join on the new one fails and pauses in turn
  await expire(s);
  await waitFor(() => failures.length === 2, { what: 'the re-join failed' });
  await other.delete('/election'); // the next attempt works
  t.mock.timers.tick(PAUSE_MS / 2); // the campaign's pause ends, the re-join's is half way
  await sleep(2000); // time for an early re-join to show
  assert.deepEqual(
    await other.getChildren('/').then((n) => n.includes('election')),
    false,
    'p0 joined before its pause ended',
  );
  assert.equal(failures.length, 2);
  t.mock.timers.tick(PAUSE_MS / 2);
  await waitFor(async () => (await other.getChildren('/election').catch(() => [])).length === 1, {
    what: 'p0 back in line',
  });
  await waitFor(() => p0.isLeader, { what: 'p0 leads again' });
});
