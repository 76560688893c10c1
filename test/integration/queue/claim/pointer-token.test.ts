/**
 * A claim writes the job's ready pointer, not its record: the pointer's new
 * version is the attempt's token. A worker that dies mid-attempt (its
 * session closed: the claim vanishes) leaves the record as it was; the next
 * claim gets the next version, past what the record counted, and counts
 * that attempt as a stall, once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('the token is the ready pointer version; the record is not written; a dead attempt is one stall at the next claim', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('ptr', env);
  t.after(() => queue.close());
  const job = await queue.add('j', { n: 1 });

  const first = new QueueStore(await prefixSession(t, env), 'ptr');
  await first.init();
  const { candidates } = await lookAtHead(first, { limit: 10, exclude: [] });
  const got = await claimJobs(first, candidates, { workerId: 'a', lockDuration: 600_000 });
  const [a] = got.claimed;
  assert.ok(a, 'claimed');
  assert.equal(a.token, 1);
  assert.equal((await first.session.exists(a.pointer))?.version, 1, "the pointer's version is the token");
  const stored = await first.session.exists(first.layout.job(job.id));
  assert.equal(stored?.version, 0, 'the claim wrote no record');
  assert.equal(a.record.attemptsStarted, 1);
  assert.equal(a.stalled, false);
  assert.equal((await first.getJob(job.id))?.record.state, 'active', 'read with its claim: active');

  // the worker dies: its claim goes with its session, the record still says waiting
  await first.session.close();
  const second = new QueueStore(await prefixSession(t, env), 'ptr');
  await second.init();
  assert.equal((await second.getJob(job.id))?.record.state, 'waiting');
  const again = await lookAtHead(second, { limit: 10, exclude: [] });
  const [b] = (await claimJobs(second, again.candidates, { workerId: 'b', lockDuration: 600_000 })).claimed;
  assert.ok(b, 'claimed again');
  assert.equal(b.token, 2);
  assert.equal(b.stalled, true, 'the attempt before it died');
  assert.equal(b.record.stalledCounter, 1);
  assert.equal(b.record.attemptsStarted, 2);
  assert.notEqual(b.pointerCzxid, undefined);
});
