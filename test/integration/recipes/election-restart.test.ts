/**
 * A leader that dies just before ZooKeeper restarts, or while it is down:
 * the restarted server restores the dead leader's session (and so its node)
 * with a fresh timeout, and the next participant in line takes over once
 * that session expires. Followers wait across the restart on the same
 * session; nobody else leads meanwhile.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ELECTION_CHANNEL, type ElectionTrace, LeaderElection, Session } from '@zkq/core';
import { startZooKeeper, TcpProxy, uniqueRoot } from '@zkq/testing';
import { waitFor } from '../../helpers/zk.js';

/**
 * Session timeouts of p0, p1, p2. Each must outlive the restarts it is to
 * wait across (a client suspended for longer declares its session lost and
 * joins again at the back), and the dying ones end soon after: p0 dies in the
 * first restart, p1 waits across it and dies in the second, p2 waits across
 * both. A restart on a machine loaded by the whole suite can take well over
 * ten seconds.
 */
const SESSION_MS = [3000, 25_000, 60_000];

test('election: a leader killed before or during a ZooKeeper restart is replaced by the next in line', async (t) => {
  const zk = await startZooKeeper();
  t.after(() => zk.stop());
  const namespace = uniqueRoot('election-restart');
  // each participant behind a proxy of its own: cutting it for good is the process dying
  const proxies = await Promise.all([0, 1, 2].map(() => TcpProxy.start(zk.connectionString)));
  t.after(() => Promise.all(proxies.map((p) => p.stop())));
  const sessions = await Promise.all(
    proxies.map((p, i) =>
      Session.connect({ connectionString: p.connectionString, namespace, sessionTimeout: SESSION_MS[i] }),
    ),
  );
  // closing the sessions ends the elections too (a dead participant's leave could only time out)
  t.after(() => Promise.all(sessions.map((s) => s.close())));
  // what each participant did and saw, for the failure message
  const started = Date.now();
  const steps: string[] = [];
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const onStep = (m: unknown) => {
    const e = m as ElectionTrace;
    steps.push(`${at()} ${e.id} ${e.step} ${e.node ?? ''} ${e.watch ?? ''} ${e.event ?? ''} ${e.error ?? ''}`);
  };
  subscribe(ELECTION_CHANNEL, onStep);
  t.after(() => unsubscribe(ELECTION_CHANNEL, onStep));
  sessions.forEach((s, i) => {
    for (const state of ['suspended', 'reconnected', 'lost'] as const)
      s.on(state, () => steps.push(`${at()} p${i} ${state}`));
  });
  const trail = () => `\n${steps.join('\n')}`;
  const elections = sessions.map((s, i) => new LeaderElection(s, '/election', { id: `p${i}` }));
  for (const e of elections) await e.start();
  const [p0, p1, p2] = elections as [LeaderElection, LeaderElection, LeaderElection];
  await waitFor(() => p0.isLeader, { what: 'p0 to lead' });

  // p0 dies; ZooKeeper restarts a moment later
  proxies[0]?.cut();
  await sleep(500);
  await zk.process.stop();
  await sleep(500);
  zk.process.start();
  await zk.process.waitServing();
  await waitFor(() => p1.isLeader, { what: 'p1 to take over', timeoutMs: 40_000 }).catch((err) => {
    throw new Error(`${err.message}${trail()}`);
  });
  assert.equal(p2.isLeader, false);

  // ZooKeeper goes down; p1 dies meanwhile
  await zk.process.stop();
  proxies[1]?.cut();
  await sleep(500);
  zk.process.start();
  await zk.process.waitServing();
  await waitFor(() => p2.isLeader, { what: 'p2 to take over', timeoutMs: 90_000 }).catch((err) => {
    throw new Error(`${err.message}${trail()}`);
  });
});
