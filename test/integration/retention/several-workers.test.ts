/**
 * Retention by count with several workers, each on its own session, that
 * finish side by side: the completed set never holds more than the count,
 * and the jobs kept once all is done are the last ones to complete (a trim
 * takes the oldest pointers, never a newer one while older ones stay).
 * Workers trimming side by side pick the same oldest pointers and collide,
 * again and again: none may then trim its own newer jobs instead.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('removeOnComplete count: several workers keep the newest jobs, never more than the count', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  const events = new QueueEvents('q', env);
  t.after(() => Promise.all([queue.close(), events.close()]));
  await events.waitUntilReady();
  const keep = 3;
  const jobs = 150;
  const order: string[] = [];
  let worst = 0;
  let checks = Promise.resolve();
  events.on('completed', ({ jobId }: { jobId: string }) => {
    order.push(jobId);
    checks = checks.then(async () => {
      worst = Math.max(worst, (await queue.getJobCounts('completed')).completed ?? 0);
    });
  });
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({ name: 'j', data: i, opts: { removeOnComplete: { count: keep } } })),
  );
  const workers = Array.from({ length: 3 }, () => new Worker('q', async () => 'ok', { ...env, concurrency: 4 }));
  t.after(() => Promise.all(workers.map((w) => w.close())));
  await waitFor(() => order.length === jobs, { what: 'every completed event', timeoutMs: 40_000 });
  await checks;
  assert.ok(worst <= keep, `the completed set held ${worst} jobs at a completed event`);
  const kept = (await queue.getJobs(['completed'], 0, -1)).map((j) => j.id).sort();
  assert.deepEqual(kept, order.slice(-keep).sort(), 'the jobs kept are the last to complete');
});
