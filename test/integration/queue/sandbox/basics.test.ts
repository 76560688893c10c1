import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InvalidArgumentError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/threaded.mjs', import.meta.url));

test('a processor file that does not exist, or is not a file, is refused when the Worker is built', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('no-file', env);
  t.after(() => queue.close());
  const job = await queue.add('x', {}, { attempts: 3 });
  const dir = mkdtempSync(join(tmpdir(), 'zkq-processor-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const missing = join(dir, 'send.mjs');
  for (const [processor, message] of [
    [missing, `processor file not found: ${missing}`],
    [relative(process.cwd(), missing), `processor file not found: ${missing}`],
    [pathToFileURL(missing), `processor file not found: ${missing}`],
    [pathToFileURL(missing).href, `processor file not found: ${missing}`],
    [dir, `processor is not a file: ${dir}`],
    ['', 'processor file path is empty'],
  ] as const) {
    assert.throws(
      () => new Worker('no-file', processor, env),
      (err: unknown) =>
        err instanceof InvalidArgumentError &&
        err.code === 'ZKQ_INVALID_ARGUMENT' &&
        err.argument === 'processor' &&
        err.message === message,
      String(processor),
    );
  }
  // Nothing ran: the job keeps its attempts.
  assert.equal(await queue.getJobState(job.id), 'waiting');
  assert.equal((await queue.getJob(job.id))?.attemptsMade, 0);

  // A relative path that exists is taken from the working directory.
  const worker = new Worker('no-file', relative(process.cwd(), PROCESSOR), { ...env, autorun: false });
  await worker.close();
});

test('a file processor runs on worker threads, with progress and logs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('threads', env);
  t.after(() => queue.close());
  const worker = new Worker('threads', PROCESSOR, { ...env, concurrency: 4, threads: 2 });
  t.after(() => worker.close());
  const progress: unknown[] = [];
  worker.on('progress', (_job, p) => progress.push(p));
  const job = await queue.add('p', { mode: 'progress', n: 21 });
  const others = await queue.addBulk(Array.from({ length: 8 }, (_, n) => ({ name: 'plain', data: { n } })));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 9, { what: '9 completed' });
  const done = await queue.getJob(job.id);
  assert.equal(done?.returnvalue.doubled, 42);
  assert.notEqual(done?.returnvalue.threadId, 0, 'ran off the main thread');
  assert.deepEqual(progress, [50, 100]);
  assert.deepEqual(await done?.getLogs(), ['half way']);
  assert.equal(done?.progress, 100);
  const results = await Promise.all(others.map((o) => queue.getJob(o.id)));
  assert.deepEqual(
    results.map((r) => r?.returnvalue.doubled),
    others.map((_, n) => n * 2),
  );
});

test('a thread per job (jobsPerThread: 1): one that throws or exits fails only its own job; the pool replaces it', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('crashy', env);
  t.after(() => queue.close());
  const worker = new Worker('crashy', PROCESSOR, { ...env, concurrency: 2, threads: 1, jobsPerThread: 1 });
  t.after(() => worker.close());
  const failed = new Map<string, Error>();
  worker.on('failed', (job, err) => job && failed.set(job.id, err));
  const exit = await queue.add('x', { mode: 'exit' });
  const thrown = await queue.add('x', { mode: 'throw', n: 7 });
  const giveUp = await queue.add('x', { mode: 'unrecoverable' }, { attempts: 5 });
  const fine = await queue.addBulk(Array.from({ length: 5 }, (_, n) => ({ name: 'ok', data: { n } })));
  await waitFor(
    async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed === 5 && c.failed === 3;
    },
    { what: '5 completed, 3 failed' },
  );
  assert.equal((await queue.getJob(thrown.id))?.failedReason, 'boom 7');
  assert.match((await queue.getJob(exit.id))?.failedReason ?? '', /exit/i);
  const unrec = await queue.getJob(giveUp.id);
  assert.equal(unrec?.failedReason, 'give up');
  assert.equal(unrec?.attemptsMade, 1, 'UnrecoverableError fails at once, attempts left or not');
  for (const f of fine) assert.equal(await (await queue.getJob(f.id))?.getState(), 'completed');
});

test('concurrency is honoured: never more than `concurrency` jobs active in a worker', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('conc', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 40 }, (_, n) => ({ name: 'c', data: n })));
  let active = 0;
  let peak = 0;
  const worker = new Worker(
    'conc',
    async () => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 20));
      active--;
    },
    { ...env, concurrency: 5 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 40, { what: '40 completed' });
  assert.ok(peak <= 5, `peak ${peak} <= 5`);
  assert.equal(peak, 5, 'the worker does use its concurrency');
});

test('close() lets in-flight jobs finish and record results; close(true) aborts them', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('closing', env);
  t.after(() => queue.close());
  const a = await queue.add('slow', {});
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const graceful = new Worker(
    'closing',
    async () => {
      started();
      await new Promise((r) => setTimeout(r, 200));
      return 'finished';
    },
    env,
  );
  await running;
  await graceful.close();
  assert.equal((await queue.getJob(a.id))?.returnvalue, 'finished');

  const b = await queue.add('hang', {});
  let aborted = false;
  let startedB!: () => void;
  const runningB = new Promise<void>((r) => {
    startedB = r;
  });
  const forced = new Worker(
    'closing',
    (_job, _token, signal) =>
      new Promise((_resolve, reject) => {
        startedB();
        signal?.addEventListener('abort', () => {
          aborted = true;
          reject(new Error('aborted'));
        });
      }),
    env,
  );
  await runningB;
  await forced.close(true);
  assert.equal(aborted, true);
  // Not failed: a forced close leaves the job to be run again.
  assert.notEqual(await (await queue.getJob(b.id))?.getState(), 'failed');
});
