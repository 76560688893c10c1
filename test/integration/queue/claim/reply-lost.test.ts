/**
 * A claim applied on the server whose reply was lost with the connection:
 * the worker finds it its own, and the job runs once. The fault proxy picks
 * the claim's write by the job's id in its path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { request, WRITE_OPS } from '../../../helpers/fault-proxy.js';
import { countingWorker, finishedState, proxied, within } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';

test('a claim whose reply was lost: the job runs once, with no stall counted (maxStalledCount 0)', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('claim-reply-lost', env);
  defer(() => queue.close());
  const claimed = proxy.loseReply(request(WRITE_OPS, '/claims/orphan'));
  const w = countingWorker(defer, 'claim-reply-lost', {
    ...via,
    lockDuration: 2000,
    stalledInterval: 300,
    maxStalledCount: 0,
  });
  await queue.add('x', {}, { jobId: 'orphan' });
  await within(claimed.fired, "the claim's reply lost");
  const state = await finishedState(queue, 'orphan');
  const stored = await queue.getJob('orphan');
  assert.equal(state, 'completed', `the job ${state}: ${stored?.failedReason ?? ''}`);
  assert.equal(w.runs.get('orphan'), 1);
  assert.equal(stored?.stalledCounter, 0);
});

test('a claim whose reply was lost, with no leader to revoke it: the job still runs', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('claim-reply-lost-no-leader', env);
  defer(() => queue.close());
  const claimed = proxy.loseReply(request(WRITE_OPS, '/claims/no-leader'));
  const w = countingWorker(defer, 'claim-reply-lost-no-leader', { ...via, housekeeping: false, lockDuration: 2000 });
  await queue.add('x', {}, { jobId: 'no-leader' });
  await within(claimed.fired, "the claim's reply lost");
  assert.equal(await finishedState(queue, 'no-leader'), 'completed');
  assert.equal(w.runs.get('no-leader'), 1);
});
