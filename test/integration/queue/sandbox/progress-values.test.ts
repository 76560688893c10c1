/**
 * A file processor's progress that crosses to the main thread but may not
 * be stored (a BigInt, NaN, a value over the progress limit; or a reported
 * value changed into one before the job ends) is refused there as an inline
 * processor's is (InvalidJobDataError, PayloadTooLargeError, as the worker's
 * `error`) and not kept: the job runs once and ends as its processor says.
 * Such a final progress made the job's finish throw (the job stayed active
 * until its lease ran out, then ran again), or was stored with it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InvalidJobDataError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/progress-values.mjs', import.meta.url));

for (const jobsPerThread of [1, 2]) {
  test(`a thread's progress that may not be stored is refused, its job ends once (jobsPerThread ${jobsPerThread})`, async (t) => {
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
    const jobs = await queue.addBulk(values.map((value) => ({ name: value, data: { value } })));
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === values.length, {
      what: `${values.length} completed`,
    });
    const done = await Promise.all(jobs.map((j) => queue.getJob(j.id)));
    assert.deepEqual(
      done.map((j) => j?.returnvalue),
      values.map((reported) => ({ reported })),
    );
    // as JSON, cut: a progress too large would fill the report
    assert.deepEqual(
      done.slice(0, 5).map((j) => JSON.stringify(j?.progress).slice(0, 20)),
      ['0', '0', '0', '0', '{"step":1}'],
    );
    // the last progress the main thread took, or none when its write was still under way at the finish
    assert.ok([0, { step: 1 }].some((p) => JSON.stringify(p) === JSON.stringify(done[5]?.progress)));
    assert.equal(runs, values.length, 'each job ran once');
    await waitFor(() => errors.length >= 4, { what: 'the refusals' });
    assert.deepEqual(errors.map((e) => (e as InvalidJobDataError).code).sort(), [
      'ZKQ_INVALID_JOB_DATA',
      'ZKQ_INVALID_JOB_DATA',
      'ZKQ_PAYLOAD_TOO_LARGE',
      'ZKQ_PAYLOAD_TOO_LARGE',
    ]);
    assert.equal(errors.filter((e) => e instanceof InvalidJobDataError).length, 2);
  });
}
