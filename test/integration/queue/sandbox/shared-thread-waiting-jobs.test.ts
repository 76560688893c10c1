/**
 * A Worker whose concurrency is more than its threads hold at once
 * (`threads` × `jobsPerThread`) keeps the rest of its jobs waiting in the
 * pool for a place on a thread. When places free, the pool hands the
 * waiting jobs to them and sends them at the end of the turn; a round that
 * filled every place while jobs still waited sent nothing, so the jobs it
 * had placed sat in the pool, holding the places, and nothing ran again:
 * the Worker held their claims for ever.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/threaded.mjs', import.meta.url));

test('jobs beyond what the threads hold at once wait for a place, and all run', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('waiting-places', env);
  t.after(() => queue.close());
  const worker = new Worker('waiting-places', PROCESSOR, { ...env, concurrency: 6, threads: 1, jobsPerThread: 2 });
  t.after(() => worker.close(true));
  const jobs = await queue.addBulk(Array.from({ length: 6 }, () => ({ name: 'c', data: { mode: 'count', ms: 20 } })));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 6, { what: '6 completed' });
  const most = await Promise.all(jobs.map(async (j) => (await queue.getJob(j.id))?.returnvalue.mostLive as number));
  assert.equal(Math.max(...most), 2, 'never more than jobsPerThread at once on the thread');
});
