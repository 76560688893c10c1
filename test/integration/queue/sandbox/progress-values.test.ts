/**
 * A file processor's progress that crosses to the main thread but may not
 * be stored (a BigInt, NaN, a value over the progress limit) is refused at
 * the processor's call in its thread, as an inline processor's is: the same
 * error classes (InvalidJobDataError, PayloadTooLargeError) and codes,
 * nothing sent, the job's progress the last good one. The call resolved and the refusal only reached the worker's `error`
 * on the main thread. Uncaught, the refusal fails the job with its name and
 * code. A reported value changed into one that may not be stored before the
 * job ends is not kept: its finish threw (the job stayed active until its
 * lease ran out, then ran again), or it was stored with it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '@zkq/producer';
import { ProcessorThreadError, Worker } from '@zkq/worker';
import { ThreadPool } from '../../../../packages/worker/src/sandbox/pool.ts';
import { poolJob } from '../../../helpers/pool-job.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/progress-values.mjs', import.meta.url));

const INVALID = { name: 'InvalidJobDataError', code: 'ZKQ_INVALID_JOB_DATA', progress: 0 };
const TOO_LARGE = { name: 'PayloadTooLargeError', code: 'ZKQ_PAYLOAD_TOO_LARGE', progress: 0 };

for (const jobsPerThread of [1, 2]) {
  test(`a thread's progress that may not be stored is refused at its call, its job ends once (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const name = `progress-values-${jobsPerThread}`;
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    const worker = new Worker(name, PROCESSOR, { ...env, concurrency: 4, threads: 2, jobsPerThread });
    t.after(() => worker.close());
    const errors: unknown[] = [];
    worker.on('error', (err) => errors.push(err));
    let runs = 0;
    worker.on('active', () => runs++);
    const values = ['bigint', 'nan', 'large', 'huge', 'fine', 'changed'];
    const jobs = await queue.addBulk([...values, 'uncaught'].map((value) => ({ name: value, data: { value } })));
    await waitFor(
      async () => {
        const counts = await queue.getJobCounts('completed', 'failed');
        return counts.completed === values.length && counts.failed === 1;
      },
      { what: `${values.length} completed, 1 failed` },
    );
    const done = await Promise.all(jobs.map((j) => queue.getJob(j.id)));
    assert.deepEqual(
      done.slice(0, values.length).map((j) => j?.returnvalue),
      [
        { reported: 'bigint', refused: INVALID },
        { reported: 'nan', refused: INVALID },
        { reported: 'large', refused: TOO_LARGE },
        { reported: 'huge', refused: TOO_LARGE },
        { reported: 'fine' },
        { reported: 'changed' },
      ],
    );
    // as JSON, cut: a progress too large would fill the report
    assert.deepEqual(
      done.slice(0, 5).map((j) => JSON.stringify(j?.progress).slice(0, 20)),
      ['0', '0', '0', '0', '{"step":1}'],
    );
    // the last progress the main thread took, or none when its write was still under way at the finish
    assert.ok([0, { step: 1 }].some((p) => JSON.stringify(p) === JSON.stringify(done[5]?.progress)));
    assert.match(done[6]?.failedReason ?? '', /a BigInt at progress/);
    assert.equal(runs, values.length + 1, 'each job ran once');
    assert.deepEqual(errors, [], 'nothing refused reached the main thread');
  });
}

test("a thread's progress refusal left uncaught crosses to the main thread with its name and code", async (t) => {
  const pool = new ThreadPool(PROCESSOR, { concurrency: 1 });
  t.after(() => pool.close());
  const job = poolJob('1', { value: 'uncaught' }, 'uncaught');
  const live: unknown[] = [];
  const run = pool.run(
    job,
    'token',
    new AbortController().signal,
    () => undefined,
    (value) => live.push(value),
  );
  await assert.rejects(run, (err: unknown) => {
    assert.ok(err instanceof ProcessorThreadError);
    assert.equal(err.name, 'InvalidJobDataError');
    assert.equal(err.code, 'ZKQ_INVALID_JOB_DATA');
    assert.match(err.message, /a BigInt at progress/);
    return true;
  });
  assert.deepEqual(live, [], 'nothing sent');
});
