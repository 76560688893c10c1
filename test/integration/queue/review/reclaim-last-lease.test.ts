/**
 * After its session expired, a worker re-creates its vanished claims while
 * their tokens hold (renewLeases' reclaim). The renewal multi carries no
 * receipt and no event: the claim's setData is its LAST op, and the executor
 * takes a NoNode there for a missing receipts directory, so the last lease
 * of every renewal batch is never reclaimed.
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
    worker.on('error', (e) => console.log('worker error', String(e), String((e as { cause?: unknown }).cause ?? '')));
    worker.on('lost', (job, err) => {
      lost.push(job.id as string);
      console.log('lost', job.id, String(err), String((err as { cause?: unknown }).cause ?? ''));
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
    const states = await Promise.all(added.map(async (j) => [j.id, await queue.getJobState(j.id as string)]));
    console.log({ started, aborted, lost, completed, states });
    assert.deepEqual(lost, [], 'no attempt lost');
    assert.deepEqual(aborted, [], 'no processor aborted');
    assert.equal(completed.length, jobs);
  });
}
