/**
 * Retention by count inside the finish, against hand changes: jobs retried
 * out of `completed` while finishes trim it are never deleted before they
 * run again (each retry completes once more), and the plain bounds
 * (`count: 0`, `true`, an age with a count) keep what they say.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('removeOnComplete count: a job retried while finishes trim runs again', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const keep = { removeOnComplete: { count: 3 } };
  let done = 0;
  const workers = [1, 2].map(() => new Worker('q', async () => 'ok', { ...env, concurrency: 3 }));
  for (const w of workers)
    w.on('completed', () => {
      done++;
    });
  t.after(() => Promise.all(workers.map((w) => w.close())));
  let jobs = 0;
  let retries = 0;
  while (retries < 30 && jobs < 400) {
    await queue.add('j', jobs++, keep);
    const [oldest] = await queue.getJobs(['completed'], 0, 0, true);
    try {
      await oldest?.retry('completed');
      if (oldest) retries++;
    } catch {
      // trimmed or retried meanwhile
    }
  }
  assert.ok(retries > 0, 'some jobs were retried');
  await waitFor(() => done === jobs + retries, {
    what: `${jobs + retries} completions (${retries} retries)`,
    timeoutMs: 20_000,
  });
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 3, { what: 'three kept' });
});

test('removeOnComplete: count 0, true, and an age with a count', {}, async (t) => {
  const env = await queueEnv(t);
  const queues = ['zero', 'all', 'aged'].map((n) => new Queue(n, env));
  t.after(() => Promise.all(queues.map((q) => q.close())));
  const opts = [{ count: 0 }, true, { age: 3600, count: 2 }] as const;
  let done = 0;
  const workers = queues.map((q) => new Worker(q.name, async () => 'ok', env));
  for (const w of workers)
    w.on('completed', () => {
      done++;
    });
  t.after(() => Promise.all(workers.map((w) => w.close())));
  for (const [i, q] of queues.entries()) {
    for (let k = 0; k < 5; k++) await q.add('j', k, { removeOnComplete: opts[i] });
  }
  await waitFor(() => done === 15, { what: 'every job to complete' });
  const counts = await Promise.all(queues.map(async (q) => (await q.getJobCounts('completed')).completed));
  assert.deepEqual(counts, [0, 0, 2]);
});
