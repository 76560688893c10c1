/**
 * A job run again reaches its thread as its new claim wrote it, not as an
 * earlier claim did: a retried job's second attempt (its counters, the
 * first attempt's progress, the new token) and a job taken over from a
 * worker that went away (its stall counted), each as the main thread's Job
 * of that attempt has it, whether the job has a thread to itself or shares one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { JobJson } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/describe-attempt.mjs', import.meta.url));

interface Described {
  fields: Record<string, unknown>;
  token: string;
}

type Seen = JobJson & { token?: string };

/** What the thread saw against the main thread's Job as its attempt started (a result is JSON: undefined fields go). */
function assertSameJob(described: Described, main: Seen): void {
  const { data: _data, token, ...json } = main;
  assert.deepEqual(described.fields, JSON.parse(JSON.stringify({ ...json, token })));
  assert.equal(described.token, token);
}

for (const jobsPerThread of [1, 2]) {
  test(`a retried job's second attempt reaches its thread as its own claim wrote it (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const name = `retried-on-thread-${jobsPerThread}`;
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    const worker = new Worker(name, PROCESSOR, { ...env, concurrency: 2, threads: 1, jobsPerThread });
    t.after(() => worker.close());
    const seen: Seen[] = [];
    worker.on('active', (job) => seen.push({ ...job.toJSON(), token: job.token }));
    const job = await queue.add('again', { failFirst: true }, { attempts: 2, backoff: { type: 'fixed', delay: 1 } });
    await waitFor(async () => (await queue.getJobState(job.id)) === 'completed', { what: 'completed' });
    assert.equal(seen.length, 2);
    const [first, second] = seen as [Seen, Seen];
    assert.notEqual(second.token, first.token);
    assert.deepEqual(
      [second.attemptsMade, second.attemptsStarted, second.stalledCounter, second.progress],
      [1, 2, 0, 7],
      "the main thread's Job of the second attempt",
    );
    assert.match(second.failedReason ?? '', /^first attempt, token /);
    assertSameJob((await queue.getJob(job.id))?.returnvalue as Described, second);
  });

  test(`a job taken over from a worker gone reaches its thread with its stall counted (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const name = `taken-over-on-thread-${jobsPerThread}`;
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    let release!: () => void;
    const never = new Promise<void>((r) => {
      release = r;
    });
    t.after(() => release());
    const started: string[] = [];
    const first = new Worker(
      name,
      async (job) => {
        started.push(job.id);
        await never;
      },
      { ...env, housekeeping: false },
    );
    first.on('error', () => undefined);
    const job = await queue.add('held', { n: 1 }, { attempts: 3 });
    await waitFor(() => started.includes(job.id), { what: 'the first attempt' });
    // gone without a result: its claim ends with its session, and the job is run again
    await first.close(true);
    const worker = new Worker(name, PROCESSOR, { ...env, concurrency: 2, threads: 1, jobsPerThread });
    t.after(() => worker.close());
    const seen: Seen[] = [];
    worker.on('active', (j) => seen.push({ ...j.toJSON(), token: j.token }));
    await waitFor(async () => (await queue.getJobState(job.id)) === 'completed', { what: 'completed' });
    assert.equal(seen.length, 1);
    const main = seen[0] as Seen;
    assert.deepEqual([main.attemptsMade, main.attemptsStarted, main.stalledCounter], [0, 2, 1]);
    assertSameJob((await queue.getJob(job.id))?.returnvalue as Described, main);
  });
}
