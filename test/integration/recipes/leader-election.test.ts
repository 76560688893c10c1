import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElection, NoNodeError, NotLeaderError, type Session, TimeoutError } from '@zkq/core';
import { expire, STEADY_SESSION_TIMEOUT_MS, sessionsOn } from '../../fixtures/recipes/helpers.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';

/** Starts one participant per session and records any moment with two leaders. */
async function participants(sessions: Session[]) {
  const elections = sessions.map((s, i) => new LeaderElection(s, '/election', { id: `p${i}` }));
  const violations: string[] = [];
  for (const e of elections) {
    e.on('elected', () => {
      const leaders = elections.filter((x) => x.isLeader).map((x) => x.id);
      if (leaders.length !== 1) violations.push(leaders.join(','));
    });
    await e.start();
  }
  const leader = () => elections.filter((e) => e.isLeader);
  return { elections, violations, leader };
}

test('election: one leader at a time; resignation hands over in join order', async (t) => {
  const { sessions } = await sessionsOn(t, 4, STEADY_SESSION_TIMEOUT_MS);
  const { elections, violations, leader } = await participants(sessions.slice(0, 3));
  const observer = new LeaderElection(sessions[3]!, '/election', { id: 'observer' });
  await waitFor(() => leader().length === 1, { what: 'a leader' });
  assert.equal(leader()[0]!.id, 'p0');
  assert.equal(await observer.leader(), 'p0');

  const deposed = nextEvent(elections[0]!, 'deposed');
  await elections[0]!.resign();
  await deposed;
  await waitFor(() => elections[1]!.isLeader, { what: 'p1 elected' });
  assert.equal(await observer.leader(), 'p1');
  await elections[1]!.close();
  await waitFor(() => elections[2]!.isLeader, { what: 'p2 elected' });

  await elections[0]!.start(); // re-joins at the back
  assert.equal(elections[0]!.isLeader, false);
  await elections[2]!.resign();
  await elections[0]!.waitUntilLeader({ timeout: 30_000 });
  assert.deepEqual(violations, []);
  assert.equal(leader().length, 1);
  await assert.rejects(elections[1]!.start(), { code: 'ZKQ_CLOSED' });
  assert.throws(() => elections[2]!.fence(), NotLeaderError);
  await assert.rejects(elections[2]!.waitUntilLeader({ timeout: 200 }), TimeoutError);
});

test('election: an expired leader is deposed, fenced out, and re-joins on its new session', async (t) => {
  const { sessions } = await sessionsOn(t, 3, STEADY_SESSION_TIMEOUT_MS);
  const { elections, leader } = await participants(sessions);
  await waitFor(() => leader().length === 1, { what: 'a leader' });
  const [p0, p1] = elections as [LeaderElection, LeaderElection];
  assert.ok(p0.isLeader);
  await sessions[0]!.create('/fenced', Buffer.from('0'));
  await sessions[0]!.multi([p0.fence(), { op: 'setData', path: '/fenced', data: Buffer.from('1') }]);
  const fence = p0.fence();

  const deposed = nextEvent(p0, 'deposed', 30_000);
  const started = Date.now();
  await expire(sessions[0]!);
  await deposed;
  await p1.waitUntilLeader({ timeout: 30_000 });
  assert.ok(Date.now() - started < 30_000);
  await assert.rejects(
    sessions[0]!.multi([fence, { op: 'setData', path: '/fenced', data: Buffer.from('stale') }]),
    NoNodeError,
  );
  assert.equal((await sessions[1]!.getData('/fenced')).data.toString(), '1');
  assert.throws(() => p0.fence(), NotLeaderError);

  // p0 re-joined behind the others on its new session.
  await waitFor(async () => (await sessions[1]!.getChildren('/election')).length === 3, { what: 'p0 re-joined' });
  assert.equal(p0.isLeader, false);
  assert.equal(await p0.leader(), 'p1');
});

test('election: a leader deposed by its node deleted, its session expired before its leave is answered, re-joins once', async (t) => {
  const { sessions } = await sessionsOn(t, 3, STEADY_SESSION_TIMEOUT_MS);
  const { elections } = await participants(sessions);
  const [p0, p1, p2] = elections as [LeaderElection, LeaderElection, LeaderElection];
  await waitFor(() => p0.isLeader, { what: 'p0 to lead' });
  const [s0, , outsider] = sessions as [Session, Session, Session];
  const [first] = (await outsider.getChildren('/election')).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
  const node = `/election/${first}`;
  // p0's leave of its deleted node is answered late: only once p0 is back in line on its next session
  let answerLeave!: () => void;
  const leaveAnswerable = new Promise<void>((resolve) => {
    answerLeave = resolve;
  });
  let leaveAnswered: Promise<unknown> | undefined;
  const deleteOn = s0.delete.bind(s0);
  s0.delete = (path: string, version?: number) => {
    if (path !== node) return deleteOn(path, version);
    leaveAnswered = leaveAnswerable.then(() => deleteOn(path, version));
    return leaveAnswered as Promise<void>;
  };
  const deposed = nextEvent(p0, 'deposed');
  await outsider.delete(node);
  await deposed;
  assert.ok(leaveAnswered, "p0's leave is sent as it is deposed");
  await expire(s0);
  await waitFor(async () => (await outsider.getChildren('/election')).length === 3, { what: 'p0 back in line' });
  answerLeave();
  await leaveAnswered?.catch(() => undefined);
  // a second node of p0 would leave its first in line, ahead of it, for as long as its session lives: nobody would lead
  await p1.close();
  await p2.close();
  await p0.waitUntilLeader({ timeout: 30_000 });
  assert.equal((await outsider.getChildren('/election')).length, 1);
});

test('election: closing the leader session elects the next participant', async (t) => {
  const { sessions } = await sessionsOn(t, 3, STEADY_SESSION_TIMEOUT_MS);
  const { elections, violations, leader } = await participants(sessions);
  await waitFor(() => leader().length === 1, { what: 'a leader' });
  await sessions[0]!.close();
  await elections[1]!.waitUntilLeader({ timeout: 30_000 });
  assert.equal(elections[2]!.isLeader, false);
  assert.deepEqual(
    violations.filter((v) => !v.startsWith('p0')),
    [],
  );
});

test('election: a failed re-join after a new session is retried, each failure emitted as error', async (t) => {
  const { sessions } = await sessionsOn(t, 2, STEADY_SESSION_TIMEOUT_MS);
  const [s, other] = sessions as [Session, Session];
  // Runs before the election's own hook: breaks the election path for the re-join
  // (an ephemeral node cannot have children) on the new session.
  s.onNewSession(async () => {
    await other.deleteRecursive('/election');
    await other.create('/election', undefined, 'ephemeral');
  });
  const election = new LeaderElection(s, '/election', { id: 'p0' });
  const errors: Error[] = [];
  election.on('error', (err) => errors.push(err));
  await election.start();
  await election.waitUntilLeader({ timeout: 30_000 });
  await expire(s);
  await waitFor(() => errors.length >= 1, { what: 'the failed re-join reported' });
  assert.equal((errors[0] as { code?: string }).code, 'ZK_NO_CHILDREN_FOR_EPHEMERALS');
  assert.equal(election.isLeader, false);
  await other.delete('/election'); // the next attempt creates the path again
  await election.waitUntilLeader({ timeout: 30_000 });
  assert.deepEqual(await other.getChildren('/election').then((n) => n.length), 1);
  await election.close();
  assert.deepEqual(await other.getChildren('/election'), []);
});

test("election: the leader's own node rewritten from outside, then deleted: the leader is still deposed", async (t) => {
  const { sessions } = await sessionsOn(t, 3, STEADY_SESSION_TIMEOUT_MS);
  const { elections } = await participants(sessions.slice(0, 2));
  await waitFor(() => elections[0]!.isLeader, { what: 'p0 to lead' });
  const outsider = sessions[2]!;
  const [first] = (await outsider.getChildren('/election')).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
  const node = `/election/${first}`;
  assert.equal((await outsider.getData(node)).data.toString(), 'p0');
  // a data watch fires once: after this write the leader must still be watching its node
  await outsider.setData(node, Buffer.from('p0'));
  const deposed = nextEvent(elections[0]!, 'deposed');
  await outsider.delete(node);
  await deposed;
  await waitFor(() => elections[1]!.isLeader, { what: 'p1 to take over' });
  assert.equal(elections[0]!.isLeader, false, 'two leaders: p0 never noticed its node was deleted');
});

test('election: placeAmong tells each participant its place in a listing, 0 the leader', async (t) => {
  const { sessions } = await sessionsOn(t, 4, STEADY_SESSION_TIMEOUT_MS);
  const { elections } = await participants(sessions.slice(0, 3));
  const observer = new LeaderElection(sessions[3]!, '/election', { id: 'observer' });
  const listing = await sessions[3]!.getChildren('/election');
  assert.deepEqual(
    elections.map((e) => e.placeAmong(listing)),
    [0, 1, 2],
  );
  assert.equal(observer.placeAmong(listing), undefined, 'not joined');
  await elections[0]!.resign();
  const after = await sessions[3]!.getChildren('/election');
  assert.deepEqual(
    elections.map((e) => e.placeAmong(after)),
    [undefined, 0, 1],
  );
});
