/**
 * A job's record bytes, as its claim wrote them, go to its thread and are
 * let go: a Job object kept after its attempt ended (from an event) does
 * not hold them, whether it ran or failed without running (stalled too
 * often). It did, through the attempt its methods report to, so keeping
 * finished jobs kept a second copy of each record.
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

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/describe-job.mjs', import.meta.url));

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Memory of ArrayBuffers (Buffers among them) once the garbage is collected, bytes. */
async function heldBuffers(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().arrayBuffers;
}

for (const jobsPerThread of [1, 2]) {
  test(`a finished job kept by the application does not hold its record's bytes (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const name = `bytes-released-${jobsPerThread}`;
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    const worker = new Worker(name, PROCESSOR, { ...env, concurrency: 4, threads: 2, jobsPerThread });
    t.after(() => worker.close());
    await worker.waitUntilReady();
    const count = 48;
    const size = 400_000; // a record of about that many bytes each: ~20 MB in all
    const kept: Job[] = [];
    worker.on('completed', (job) => kept.push(job));
    const before = await heldBuffers();
    for (let i = 0; i < count; i += 4) {
      await queue.addBulk(
        Array.from({ length: 4 }, (_, j) => ({ name: 'big', data: { text: 'x'.repeat(size), n: i + j } })),
      );
    }
    await waitFor(() => kept.length === count, { what: `${count} completed` });
    const growth = (await heldBuffers()) - before;
    assert.equal(kept.length, count);
    assert.ok(growth < (count * size) / 2, `${Math.round(growth / 1e6)} MB of buffers held after ${count} jobs ended`);
  });
}

test("a job failed without running (stalled too often) and kept does not hold its record's bytes", async (t) => {
  const env = await queueEnv(t);
  const name = 'bytes-released-stalled';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const count = 24;
  const size = 400_000;
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
    { ...env, concurrency: count, housekeeping: false },
  );
  first.on('error', () => undefined);
  for (let i = 0; i < count; i += 4) {
    await queue.addBulk(
      Array.from({ length: 4 }, (_, j) => ({ name: 'big', data: { text: 'x'.repeat(size), n: i + j } })),
    );
  }
  await waitFor(() => started === count, { what: `${count} started` });
  await first.close(true); // gone: each job is taken again with a stall counted, one more than allowed
  const worker = new Worker(name, PROCESSOR, {
    ...env,
    concurrency: 4,
    threads: 2,
    maxStalledCount: 0,
    autorun: false,
  });
  t.after(() => worker.close());
  const kept: Job[] = [];
  worker.on('failed', (job) => kept.push(job as Job));
  const before = await heldBuffers();
  void worker.run();
  await waitFor(() => kept.length === count, { what: `${count} failed` });
  const growth = (await heldBuffers()) - before;
  assert.equal(kept[0]?.failedReason, 'job stalled more than allowable limit');
  assert.ok(growth < (count * size) / 2, `${Math.round(growth / 1e6)} MB of buffers held after ${count} jobs failed`);
});
