/**
 * A job a rate-limited processor gives back (worker.rateLimit, then
 * RateLimitError) on the ZooKeeper backend returns to the head of its
 * priority, ahead of the jobs added after it, as on Redis: FIFO within a
 * priority holds through a dynamic limit, and it is the first claimed after.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

/** Long enough that nothing else is claimed while the test looks. */
const WINDOW_MS = 60_000;

for (const [kind, opts, state] of [
  ['a priority', { priority: 10 }, 'prioritized'],
  ['no priority', {}, 'waiting'],
] as const) {
  test(`a job given back under a rate limit keeps its place among jobs of ${kind}`, async (t) => {
    const { connection } = await bullEnv(t);
    const queue = new Queue('lo', { connection });
    t.after(() => queue.close());
    const jobs = [];
    for (let i = 1; i <= 4; i++) jobs.push(await queue.add(`${i}`, {}, opts));
    const first = jobs[0];
    assert.ok(first);
    let runs = 0;
    const worker = new Worker(
      'lo',
      async () => {
        runs++;
        await worker.rateLimit(WINDOW_MS);
        throw Worker.RateLimitError();
      },
      { connection, limiter: { max: 1, duration: 100 } },
    );
    t.after(() => worker.close());
    await waitFor(async () => runs === 1 && (await queue.getJobState(first.id as string)) === state, {
      what: 'the first job given back',
    });
    const listed = await queue.getJobs([state], 0, -1, true);
    assert.deepEqual(
      listed.map((j) => j.name),
      ['1', '2', '3', '4'],
    );
    // and it is claimed first once the window is gone
    await worker.close();
    await queue.removeRateLimitKey();
    const ran: string[] = [];
    const next = new Worker('lo', async (j) => void ran.push(j.name), { connection });
    t.after(() => next.close());
    await waitFor(() => ran.length === 4, { what: 'the four jobs to run' });
    assert.deepEqual(ran, ['1', '2', '3', '4']);
  });
}
