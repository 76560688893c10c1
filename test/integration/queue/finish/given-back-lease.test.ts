/**
 * A job given back in place (its processor hit a rate limit: BullMQ's
 * RateLimitError, or moveToWait) keeps its ready pointer, at the head of its
 * lane. The attempt's lease must end with its finish all the same: the
 * worker renews its leases until the finish's reply comes, so a renewal
 * handed over right after the finish (the renewer's tick while it was
 * written) meets a pointer still at the attempt's token. It must not find
 * the lease held and re-create the claim: that claim would hold the waiting
 * job from every worker until the leader revoked it a lease later, counting
 * a stall the job never had.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, finishJobs, leaseOf, lookAtHead, QueueStore, renewLeases } from '@zkq/core/internal';
import { twoWorkers } from '../../../helpers/claim-race.js';

const OPTS = { workerId: 'mine', lockDuration: 600_000 };

test('a renewal sent after a finish in place finds the lease lost, and the job is claimed at once', async (t) => {
  const { mine, other, store, layout } = await twoWorkers(t, 'given-back');
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const {
    claimed: [job],
  } = await claimJobs(store, candidates, OPTS);
  assert.ok(job);
  const [finished] = await finishJobs(store, [
    { job, outcome: { kind: 'retry', reason: '', stacktrace: [], due: 0, skipAttempt: true } },
  ]);
  assert.deepEqual(finished, { ok: true });

  const lost = await renewLeases(store, [leaseOf(job)], OPTS);
  assert.equal(lost.length, 1, "the finished attempt's lease is lost");
  assert.equal(await mine.exists(layout.claim('x')), null, 'no claim re-created');

  const theirs = new QueueStore(other, 'given-back');
  await theirs.init();
  const { candidates: again } = await lookAtHead(theirs, { limit: 10, exclude: [] });
  assert.deepEqual(
    again.map((c) => c.pointer),
    [job.pointer],
    'the job waits at the head of its lane, on its pointer',
  );
  const {
    claimed: [next],
  } = await claimJobs(theirs, again, { ...OPTS, workerId: 'other' });
  assert.ok(next, 'another worker claims the job at once');
  assert.equal(next.record.stalledCounter, 0, 'no stall counted');
  assert.equal(next.stalled, false);
  assert.equal(next.record.attemptsStarted, 2);
  assert.equal(next.record.attemptsMade, 0, 'a job given back spends no attempt');
});
