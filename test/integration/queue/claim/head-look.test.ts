/**
 * A look at the head of the queue reads, in one request with the claims, the
 * listings the previous look made: an idle worker woken by a new job reads
 * the head in one round trip when its shape (lanes, buckets) is unchanged,
 * and whatever the previous look did not list (a new lane) is listed after.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const REMOVE = { removeOnComplete: true } as const;

test('a look at a head of unchanged shape is one request, the claims in it; a new lane is listed after it', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('look', env);
  t.after(() => queue.close());
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'look');
  await store.init();
  const a = await queue.add('a', {}, REMOVE);
  const first = await lookAtHead(store, { limit: 10, exclude: [] });
  assert.deepEqual(
    first.candidates.map((c) => c.id),
    [a.id],
  );
  assert.ok(first.listed.length >= 3, `listed ${first.listed.join(', ')}`);

  // running jobs keep their pointers at the head: a claimed one is left out
  const { claimed } = await claimJobs(store, first.candidates, { workerId: 'test', lockDuration: 600_000 });
  assert.equal(claimed.length, 1);
  const b = await queue.add('b', {}, REMOVE);
  const before = session.stats.requests;
  const second = await lookAtHead(store, { limit: 10, exclude: [], ahead: first.listed });
  assert.equal(session.stats.requests - before, 1, 'claims and every listing in one request');
  assert.deepEqual(
    second.candidates.map((c) => c.id),
    [b.id],
  );

  // a priority the last look never saw: its lane is listed after the request read ahead
  const p = await queue.add('p', {}, { ...REMOVE, priority: 3 });
  const c = await queue.add('c', {}, REMOVE);
  const third = await lookAtHead(store, { limit: 10, exclude: [b.id], ahead: second.listed });
  assert.deepEqual(
    third.candidates.map((x) => x.id),
    [c.id, p.id],
  );
  const fourth = await lookAtHead(store, { limit: 10, exclude: [], ahead: third.listed });
  assert.deepEqual(
    fourth.candidates.map((x) => x.id),
    [b.id, c.id, p.id],
  );
});
