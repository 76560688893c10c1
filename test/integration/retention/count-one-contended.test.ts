/**
 * removeOnComplete and removeOnFail with a count of 1, many workers on
 * their own sessions finishing at once (every finish contends for the same
 * single place): every job settles once, no worker reports an error, and
 * each set ends at one job.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('count 1 under contention: every finish commits, each set ends at one', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const settled = new Map<string, number>();
  const errors: unknown[] = [];
  const workers = Array.from(
    { length: 4 },
    () =>
      new Worker(
        'q',
        async (job) => {
          if ((job.data as number) % 3 === 0) throw new Error('third');
          return 'ok';
        },
        { ...env, concurrency: 8 },
      ),
  );
  const note = (job: { id: string } | undefined) => {
    if (job) settled.set(job.id, (settled.get(job.id) ?? 0) + 1);
  };
  for (const w of workers) {
    w.on('completed', note);
    w.on('failed', note);
    w.on('error', (e) => errors.push(e));
  }
  t.after(() => Promise.all(workers.map((w) => w.close())));
  const jobs = 400;
  const keep = { count: 1 };
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({
      name: 'j',
      data: i,
      opts: { removeOnComplete: keep, removeOnFail: keep },
    })),
  );
  await waitFor(() => settled.size === jobs, { what: `every job to settle (${settled.size})`, timeoutMs: 40_000 });
  assert.deepEqual(errors, []);
  assert.ok(
    [...settled.values()].every((n) => n === 1),
    'each job settled once',
  );
  await waitFor(
    async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed === 1 && c.failed === 1;
    },
    { what: 'one job kept in each set' },
  );
});
