/**
 * Retention of failed jobs (removeOnFail with a count) reads every trimmed
 * job's record, one request each, to find the children of flows still
 * pending for a parent (trimMoves): queues without flows pay a request per
 * failed job too (at concurrency 1: ~4.7 requests per failed job against
 * ~3.7 per completed one, which retention trims without a read; both were
 * ~3.7 before).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

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
  let done = 0;
  const worker = new Worker(
    name,
    async () => {
      if (fail) throw new Error('broken');
      return 'ok';
    },
    { ...env, concurrency: 1 },
  );
  t.after(() => worker.close());
  worker.on(fail ? 'failed' : 'completed', () => {
    done++;
  });
  const session = await worker.client;
  await waitFor(() => done >= 20, { what: 'a warm-up' });
  const [requests, from] = [session.stats.requests, done];
  await waitFor(() => done >= jobs, { what: 'the backlog to be done', timeoutMs: 60_000 });
  const perJob = (session.stats.requests - requests) / (done - from);
  await worker.close();
  return perJob;
}

test('trimming failed jobs of a queue without flows costs no request per job', {}, async (t) => {
  const completing = await requestsPerJob(t, 'completing', false);
  const failing = await requestsPerJob(t, 'failing', true);
  assert.ok(
    failing - completing <= 0.5,
    `requests per job: ${completing.toFixed(2)} completing, ${failing.toFixed(2)} failing`,
  );
});
