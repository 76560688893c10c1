/**
 * Retention of failed jobs (removeOnFail with a count) must read a trimmed
 * job's record only where it may be a child of a flow still pending for its
 * parent: a queue without flows pays no request per failed job (at
 * concurrency 1, failing and completing jobs cost the same ~3.7 requests).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { workerRequestsPerJob } from '../../helpers/requests.js';

/** Requests a worker at concurrency 1 sends per job over a backlog of jobs that all complete, or all fail. */
async function requestsPerJob(t: { name?: string; after: (fn: () => unknown) => void }, name: string, fail: boolean) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const jobs = 300;
  const keep = { count: 5 };
  await queue.addBulk(
    Array.from({ length: jobs }, () => ({ name: 'j', data: 0, opts: { removeOnComplete: keep, removeOnFail: keep } })),
  );
  return workerRequestsPerJob(t, env, name, jobs, fail);
}

test('trimming failed jobs of a queue without flows costs no request per job', {}, async (t) => {
  const completing = await requestsPerJob(t, 'completing', false);
  const failing = await requestsPerJob(t, 'failing', true);
  assert.ok(
    failing - completing <= 0.5,
    `requests per job: ${completing.toFixed(2)} completing, ${failing.toFixed(2)} failing`,
  );
});
