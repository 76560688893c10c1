/**
 * A leader's read of a lease answered late (a pause between its read and its
 * decision) must not revoke a worker that renews the lease meanwhile. The
 * fault proxy delays the leader's read of the job's claim.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { READ_OPS, request } from '../../../helpers/fault-proxy.js';
import { countingWorker, finishedState, proxied, within } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';

test('the leader does not revoke a renewing worker from a read of its lease that arrived late', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('stale-lease-read', env);
  defer(() => queue.close());
  const job = await queue.add('healthy', {}, { jobId: 'renewing' });
  // The leader's first read of this claim is answered 2.5 s late (longer than the
  // lease, while the worker renews it every second): a pause between read and decision.
  const slow = proxy.delayReply(request(READ_OPS, `/claims/${job.id}`), 2500);
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const owner = countingWorker(
    defer,
    'stale-lease-read',
    { ...env, housekeeping: false, lockDuration: 2000, maxStalledCount: 0 },
    async (_job, signal) => {
      started();
      // Runs until the late reply has been let through, then two more leases:
      // time for whatever the late read led to. An abort ends it early.
      const until = (ms: number) => sleep(ms, undefined, { signal }).catch(() => undefined);
      await Promise.race([slow.done, until(20_000)]);
      await until(4000);
      return 'by-owner';
    },
  );
  await within(running, 'the job started');
  const leader = countingWorker(
    defer,
    'stale-lease-read',
    { ...via, stalledInterval: 300, lockDuration: 2000, maxStalledCount: 0 },
    async () => 'by-leader',
  );
  const state = await finishedState(queue, job.id, 40_000);
  assert.ok(slow.hasFired, "the leader's read of the claim was answered late");
  assert.equal(state, 'completed', `the job ${state}: ${(await queue.getJob(job.id))?.failedReason ?? ''}`);
  assert.deepEqual(leader.stalled, [], 'the leader revoked nothing');
  assert.deepEqual(owner.lost, [], 'the owner lost nothing');
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.returnvalue, 'by-owner');
  assert.equal(stored?.stalledCounter, 0);
  assert.equal(owner.runs.get(job.id), 1);
  assert.equal(leader.runs.get(job.id), undefined);
});
