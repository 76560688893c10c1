/**
 * One job's oversized progress is refused for that job alone: it must not
 * cost the worker's other jobs their leases.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PayloadTooLargeError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a 1.1 MB progress is refused for its own job; the worker keeps every other lease', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('big-progress', env);
  t.after(() => queue.close());
  const lockDuration = 1000;
  // Every job outlives several leases, so leases that are not renewed run out and get revoked.
  const hold = 4 * lockDuration;
  const runs = new Map<string, number>();
  let progressError: unknown = 'updateProgress resolved';
  const worker = new Worker(
    'big-progress',
    async (job) => {
      runs.set(job.name, (runs.get(job.name) ?? 0) + 1);
      if (job.name === 'big') {
        progressError = await job.updateProgress('p'.repeat(1_100_000)).then(
          () => 'updateProgress resolved',
          (err: unknown) => err,
        );
      }
      await sleep(hold);
      return job.name;
    },
    { ...env, concurrency: 3, lockDuration, lockRenewTime: lockDuration / 4, stalledInterval: lockDuration / 4 },
  );
  t.after(() => worker.close());
  const completed: string[] = [];
  const harmed: string[] = [];
  worker.on('completed', (job) => completed.push(job.name));
  worker.on('lost', (job) => harmed.push(`lost ${job.name}`));
  worker.on('stalled', (id) => harmed.push(`stalled ${id}`));
  worker.on('error', () => undefined); // renewal errors are what this test provokes
  await queue.addBulk([
    { name: 'small-1', data: {} },
    { name: 'big', data: {} },
    { name: 'small-2', data: {} },
  ]);
  await waitFor(() => completed.length === 3 || harmed.length > 0, {
    timeoutMs: 40_000,
    what: 'all three jobs done, or one revoked',
  });
  assert.deepEqual(harmed, [], 'no job lost its lease');
  assert.deepEqual(
    [...runs.entries()].sort(),
    [
      ['big', 1],
      ['small-1', 1],
      ['small-2', 1],
    ],
    'each job ran once',
  );
  assert.ok(progressError instanceof PayloadTooLargeError, `updateProgress refused with: ${String(progressError)}`);
  assert.deepEqual(completed.sort(), ['big', 'small-1', 'small-2']);
});
