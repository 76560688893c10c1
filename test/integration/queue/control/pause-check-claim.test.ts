/**
 * A claim checks the pause flag at the version it was read unset, once per
 * transaction. A pause that committed first fails the claim, and that is
 * neither another worker's collision nor the loss of its candidates: they
 * are left to take once the queue is resumed, on the plain and on the
 * limited path.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { Op } from '@zkq/core';
import { type Candidate, claimJobs, claimLimited, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

async function pausedUnderClaim(t: TestContext, name: string) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const jobs = await Promise.all([queue.add('a', {}), queue.add('b', {})]);
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, name);
  await store.init();
  const read = await store.pauseState();
  assert.equal(read.paused, false);
  await queue.pause(); // after the flag was read: the claim carries the older version
  const look = await lookAtHead(store, { limit: 10, exclude: [] });
  assert.equal(look.candidates.length, 2);
  const sent: Op[][] = [];
  const multi = session.multi.bind(session);
  session.multi = ((ops: readonly Op[]) => {
    sent.push([...ops]);
    return multi(ops);
  }) as typeof session.multi;
  const o = { workerId: 'w', lockDuration: 60_000, pauseVersion: () => read.version };
  return { queue, store, jobs, candidates: look.candidates, o, sent };
}

function ids(candidates: Candidate[]): string[] {
  return candidates.map((c) => c.id).sort();
}

test('a plain claim met by a pause: nothing claimed, nothing skipped, every candidate left', async (t) => {
  const { queue, store, jobs, candidates, o, sent } = await pausedUnderClaim(t, 'plain');
  const result = await claimJobs(store, candidates, o);
  assert.deepEqual(result.claimed, []);
  assert.deepEqual(result.skipped, [], 'not counted as taken by another worker');
  assert.deepEqual(ids(result.left), ids(candidates));
  const checks = sent.flat().filter((op) => op.op === 'check' && op.path === store.layout.meta);
  assert.equal(checks.length, sent.length, 'one check of the pause flag per claim transaction');
  for (const j of jobs) assert.equal(await queue.getJobState(j.id as string), 'waiting');
  assert.deepEqual(await store.session.getChildren(store.layout.claimsDir), []);

  // read again once resumed, the same candidates are claimed
  await queue.resume();
  const fresh = await store.pauseState();
  const again = await claimJobs(store, result.left, { ...o, pauseVersion: () => fresh.version });
  assert.deepEqual(ids(again.left), []);
  assert.deepEqual(again.claimed.map((c) => c.record.id).sort(), ids(candidates));
});

test('a limited claim met by a pause: not raced, nothing skipped, every candidate left', async (t) => {
  const { queue, store, jobs, candidates, o } = await pausedUnderClaim(t, 'limited');
  const result = await claimLimited(store, candidates, o, { kind: 'open', capacity: 2, slots: ['s-0', 's-1'] });
  assert.deepEqual(result.claimed, []);
  assert.deepEqual(result.skipped, []);
  assert.equal(result.raced, false);
  assert.deepEqual(ids(result.left), ids(candidates));
  for (const j of jobs) assert.equal(await queue.getJobState(j.id as string), 'waiting');
  assert.deepEqual(await store.session.getChildren(store.layout.claimsDir), []);
});
