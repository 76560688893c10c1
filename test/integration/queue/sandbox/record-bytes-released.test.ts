/**
 * A job's record bytes, as its claim wrote them, go to its thread and are
 * let go on the main thread: a Job object kept after its attempt ended
 * (from an event) does not hold them, whether it ran or failed without
 * running (stalled too often), nor does a cancelled job whose processor
 * runs on in its shared thread. They were held, through the attempt a
 * Job's methods report to, or the pool's record of a run still going.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Job } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const DESCRIBE = fileURLToPath(new URL('../../../fixtures/processors/describe-job.mjs', import.meta.url));
const THREADED = fileURLToPath(new URL('../../../fixtures/processors/threaded.mjs', import.meta.url));

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Watches the record bytes the worker hands its thread pool (before it
 * runs: `autorun: false`); `held()` counts those still alive once the
 * garbage is collected.
 */
function watchBytes(worker: Worker): { handed: () => number; held: () => Promise<number> } {
  const pool = (worker as unknown as { pool: { run: (job: unknown, ...rest: unknown[]) => Promise<unknown> } }).pool;
  const run = pool.run.bind(pool);
  const handed: WeakRef<Uint8Array>[] = [];
  pool.run = (job, ...rest) => {
    if (job instanceof Uint8Array) handed.push(new WeakRef(job));
    return run(job, ...rest);
  };
  return {
    handed: () => handed.length,
    held: async () => {
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        gc();
      }
      return handed.filter((r) => r.deref() !== undefined).length;
    },
  };
}

const COUNT = 12;

for (const jobsPerThread of [1, 2]) {
  test(`a finished job kept by the application does not hold its record's bytes (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const name = `bytes-released-${jobsPerThread}`;
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    const worker = new Worker(name, DESCRIBE, { ...env, concurrency: 4, threads: 2, jobsPerThread, autorun: false });
    t.after(() => worker.close());
    const bytes = watchBytes(worker);
    const kept: Job[] = [];
    worker.on('completed', (job) => kept.push(job));
    void worker.run();
    await queue.addBulk(Array.from({ length: COUNT }, (_, n) => ({ name: 'j', data: { text: 'x'.repeat(2000), n } })));
    await waitFor(() => kept.length === COUNT, { what: `${COUNT} completed` });
    assert.equal(bytes.handed(), COUNT);
    assert.equal(await bytes.held(), 0);
  });
}

test("a job failed without running (stalled too often) and kept does not hold its record's bytes", async (t) => {
  const env = await queueEnv(t);
  const name = 'bytes-released-stalled';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  let release!: () => void;
  const never = new Promise<void>((r) => {
    release = r;
  });
  t.after(() => release());
  let started = 0;
  const first = new Worker(
    name,
    async () => {
      started++;
      await never;
    },
    { ...env, concurrency: COUNT, housekeeping: false },
  );
  first.on('error', () => undefined);
  await queue.addBulk(Array.from({ length: COUNT }, (_, n) => ({ name: 'j', data: { n } })));
  await waitFor(() => started === COUNT, { what: `${COUNT} started` });
  await first.close(true); // gone: each job is taken again with a stall counted, one more than allowed
  const worker = new Worker(name, DESCRIBE, { ...env, concurrency: 4, threads: 2, maxStalledCount: 0 });
  t.after(() => worker.close());
  // the bytes of each attempt's claim, seen as it fails the job without running it
  const attempts = (worker as unknown as { attempts: Map<string, { claimed: { bytes?: Uint8Array } }> }).attempts;
  const claimed: WeakRef<Uint8Array>[] = [];
  worker.on('stalled', (id: string) => {
    const bytes = attempts.get(id)?.claimed.bytes;
    if (bytes) claimed.push(new WeakRef(bytes));
  });
  const kept: Job[] = [];
  worker.on('failed', (job) => kept.push(job as Job));
  await waitFor(() => kept.length === COUNT, { what: `${COUNT} failed` });
  assert.equal(kept[0]?.failedReason, 'job stalled more than allowable limit');
  assert.equal(claimed.length, COUNT);
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  assert.equal(claimed.filter((r) => r.deref() !== undefined).length, 0);
});

test('a cancelled job whose processor runs on in its shared thread does not keep its record bytes on the main thread', async (t) => {
  const env = await queueEnv(t);
  const name = 'bytes-released-lingering';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const worker = new Worker(name, THREADED, {
    ...env,
    concurrency: COUNT,
    threads: 1,
    jobsPerThread: COUNT,
    autorun: false,
  });
  t.after(() => worker.close(true));
  const bytes = watchBytes(worker);
  let failed = 0;
  worker.on('failed', () => failed++);
  void worker.run();
  const jobs = await queue.addBulk(
    Array.from({ length: COUNT }, () => ({ name: 'j', data: { mode: 'ignore', text: 'x'.repeat(2000) } })),
  );
  await waitFor(async () => (await queue.getJobCounts('active')).active === COUNT, { what: `${COUNT} active` });
  await waitFor(() => bytes.handed() === COUNT, { what: 'all handed to the pool' });
  for (const job of jobs) await queue.cancelJob(job.id, 'not needed');
  // each processor ignores its signal: it runs on in the thread, its job failed at once
  await waitFor(() => failed === COUNT, { what: `${COUNT} failed` });
  assert.equal(await bytes.held(), 0);
});
