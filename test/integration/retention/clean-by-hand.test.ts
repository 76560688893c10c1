/**
 * Retention by count inside the finish while the completed set is cleaned
 * and its jobs removed by hand: every job completes once, none fails, the
 * workers report no error, and the set ends within its count.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('removeOnComplete count: clean and remove by hand while workers trim', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const completed = new Map<string, number>();
  const failed: string[] = [];
  const errors: unknown[] = [];
  const workers = [1, 2].map(() => new Worker('q', async () => 'ok', { ...env, concurrency: 4 }));
  for (const w of workers) {
    w.on('completed', (job) => completed.set(job.id, (completed.get(job.id) ?? 0) + 1));
    w.on('failed', (job) => failed.push(String(job?.id)));
    w.on('error', (e) => errors.push(e));
  }
  t.after(() => Promise.all(workers.map((w) => w.close())));
  const jobs = 240;
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({ name: 'j', data: i, opts: { removeOnComplete: { count: 6 } } })),
  );
  let cleaned = 0;
  let removed = 0;
  while (completed.size < jobs) {
    cleaned += (await queue.clean(0, 2, 'completed')).length;
    const [newest] = await queue.getJobs(['completed'], 0, 0);
    if (newest && (await queue.remove(newest.id))) removed++;
  }
  assert.ok(cleaned + removed > 0, 'some jobs were cleaned or removed by hand');
  assert.deepEqual(failed, []);
  assert.deepEqual(errors, []);
  assert.ok(
    [...completed.values()].every((n) => n === 1),
    'each job completed once',
  );
  await waitFor(async () => ((await queue.getJobCounts('completed')).completed ?? 0) <= 6, {
    what: 'six or fewer kept',
  });
});
