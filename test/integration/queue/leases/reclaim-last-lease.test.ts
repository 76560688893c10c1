/**
 * After its session expired, a worker re-creates its vanished claims while
 * their tokens hold (renewLeases' reclaim), every one of them: the last lease
 * of a renewal batch too (its claim op is the multi's last, once taken for a
 * missing receipts directory), and the leases a renewal running at the new
 * session's arrival re-creates first (see reclaim-twice.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { expire, waitFor } from '../../../helpers/zk.js';

for (const jobs of [1, 3]) {
  test(`session expiry with ${jobs} running job(s): the claims are re-created, no attempt is lost`, async (t) => {
    const env = await queueEnv(t);
    const queue = new Queue('q', env);
    t.after(() => queue.close());
    let release = false;
    const started: string[] = [];
    const aborted: string[] = [];
    const lost: string[] = [];
    const completed: string[] = [];
    const worker = new Worker(
      'q',
      async (job, _token, signal) => {
        started.push(job.id as string);
        signal?.addEventListener('abort', () => aborted.push(job.id as string));
        await waitFor(() => release || signal?.aborted, { what: 'release', timeoutMs: 30_000 });
        return 'ok';
      },
      { ...env, concurrency: jobs, lockDuration: 2000, housekeeping: false },
    );
    worker.on('lost', (job) => {
      lost.push(job.id as string);
    });
    worker.on('completed', (job) => completed.push(job.id as string));
    t.after(() => worker.close());
    const added = await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: `j${i}`, data: {} })));
    await waitFor(() => started.length === jobs, { what: 'all started' });
    await expire(await worker.client);
    // give the renewer time to re-create (or give up on) the claims: 8 retries, a few renew periods
    await new Promise((r) => setTimeout(r, 4000));
    release = true;
    await waitFor(() => completed.length + lost.length >= jobs, { what: 'settled', timeoutMs: 15_000 });
    const states = await Promise.all(added.map((j) => queue.getJobState(j.id as string)));
    assert.deepEqual(lost, [], `no attempt lost (states: ${states.join(', ')})`);
    assert.deepEqual(aborted, [], 'no processor aborted');
    assert.equal(completed.length, jobs);
  });
}
