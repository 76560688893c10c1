/**
 * Workers in several processes claim from the same head. When one batch of
 * claims meets another worker's (the multi fails on the first job taken),
 * the rest of the batch is checked in one read and sent again without the
 * jobs taken meanwhile: a collision costs one read and one more multi, not
 * one multi per job the other worker took.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { claimJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const JOBS = 40;

test('a claim batch that collides on every other job: each job claimed once, in a bounded number of requests', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('race', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ name: 'j', data: i })));
  const [sa, sb] = await Promise.all([prefixSession(t, env), prefixSession(t, env)]);
  const a = new QueueStore(sa as Session, 'race');
  const b = new QueueStore(sb as Session, 'race');
  await Promise.all([a.init(), b.init()]);
  const { candidates } = await lookAtHead(a, { limit: 100, exclude: [] });
  assert.equal(candidates.length, JOBS);

  // b takes every other job right before a's claim is sent
  const multi = sa.multi.bind(sa);
  let staged = false;
  let taken: string[] = [];
  sa.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!staged) {
      staged = true;
      const half = candidates.filter((_, i) => i % 2 === 1);
      const got = await claimJobs(b, half, { workerId: 'b', lockDuration: 600_000 });
      taken = got.claimed.map((c) => c.record.id);
    }
    return multi(ops);
  }) as typeof sa.multi;

  const before = sa.stats.requests;
  const got = await claimJobs(a, candidates, { workerId: 'a', lockDuration: 600_000 });
  const requests = sa.stats.requests - before;
  const mine = got.claimed.map((c) => c.record.id);

  assert.equal(taken.length, JOBS / 2);
  assert.equal(mine.length, JOBS / 2, 'a claims every job b did not take');
  assert.deepEqual([...mine, ...taken].sort(), candidates.map((c) => c.id).sort(), 'each job claimed once');
  assert.ok(
    got.skipped.every((s) => s.error === undefined),
    'the jobs taken are collisions, not errors',
  );
  // the multi that fails and the records' read sent beside it (thrown away), the check of the rest,
  // the multi that commits and the records' read beside it
  assert.ok(requests <= 5, `${requests} requests for one collision (one multi per job taken without the check)`);
});
