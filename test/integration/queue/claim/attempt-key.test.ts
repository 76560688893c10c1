/**
 * A Job's `token` (the string a processor is given) names one attempt among
 * every attempt of every job of the queue. Pointers created in one
 * transaction (jobs added together) share a czxid and, each claimed once,
 * the same fencing token: the token told them apart only within a job, so
 * jobs added together showed the same `job.token`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('jobs added together, each in its own lane or the same one, are run under distinct tokens', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('attempt-key', env);
  t.after(() => queue.close());
  // two in the plain lane; two in fresh lanes of their own, where each pointer is its bucket's first
  const jobs = await queue.addBulk([
    { name: 'a', data: {} },
    { name: 'b', data: {} },
    { name: 'c', data: {}, opts: { priority: 1 } },
    { name: 'd', data: {}, opts: { priority: 2 } },
  ]);
  const tokens = new Map<string, string | undefined>();
  let passed: string[] = [];
  const worker = new Worker(
    'attempt-key',
    async (job, token) => {
      tokens.set(job.id as string, job.token);
      passed = [...passed, token as string];
    },
    { ...env, concurrency: 4 },
  );
  t.after(() => worker.close());
  await waitFor(() => tokens.size === jobs.length, { what: 'every job run' });
  const seen = [...tokens.values()];
  assert.ok(
    seen.every((s) => typeof s === 'string' && s.length > 0),
    'each attempt has a token',
  );
  assert.equal(new Set(seen).size, jobs.length, `distinct tokens: ${seen.join(', ')}`);
  assert.deepEqual([...passed].sort(), [...seen].sort(), "the processor's token argument is the job's");
});
