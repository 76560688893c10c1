/**
 * BullMQ's Worker on the ZooKeeper backend with removeOnComplete and
 * removeOnFail counts, two workers side by side: every job settles once,
 * and each finished set ends at its count.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('BullMQ workers keep removeOnComplete and removeOnFail counts', {}, async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('q', { connection });
  t.after(() => queue.close());
  const settled = new Map<string, number>();
  const note = (job: Job | undefined) => {
    if (job?.id) settled.set(job.id, (settled.get(job.id) ?? 0) + 1);
  };
  const workers = [1, 2].map(
    () =>
      new Worker(
        'q',
        async (job: Job) => {
          if (job.data % 2) throw new Error('odd');
          return job.data;
        },
        { connection, concurrency: 4 },
      ),
  );
  for (const w of workers) {
    w.on('completed', note);
    w.on('failed', note);
  }
  t.after(() => Promise.all(workers.map((w) => w.close())));
  const jobs = 80;
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({
      name: 'j',
      data: i,
      opts: { removeOnComplete: { count: 4 }, removeOnFail: { count: 3 } },
    })),
  );
  await waitFor(() => settled.size === jobs, { what: 'every job to settle', timeoutMs: 30_000 });
  assert.ok(
    [...settled.values()].every((n) => n === 1),
    'each job settled once',
  );
  const counts = await queue.getJobCounts('completed', 'failed');
  assert.deepEqual(counts, { completed: 4, failed: 3 });
});
