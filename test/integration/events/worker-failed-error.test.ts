/**
 * The Worker's `failed` event carries the error the processor threw, as
 * BullMQ's does: inline, the thrown object itself; on a thread, an error
 * rebuilt with the thrown one's name, message, stack and code. What the job
 * keeps (failedReason, stacktrace) is the same either way.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Job } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { ProcessorThreadError, Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent } from '../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../fixtures/processors/threaded.mjs', import.meta.url));

class PaymentDeclined extends Error {
  override readonly name = 'PaymentDeclined';
  readonly code = 'CARD_DECLINED';
}

test("an inline processor's thrown error reaches `failed` itself; the job keeps its message and stack", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('inline-failed', env);
  t.after(() => queue.close());
  let thrown: unknown;
  const worker = new Worker(
    'inline-failed',
    async (job) => {
      thrown = job.data.plain ? 'not an Error' : new PaymentDeclined(`declined ${job.data.n}`);
      throw thrown;
    },
    env,
  );
  t.after(() => worker.close());
  const failed = nextEvent<[Job | undefined, Error, string]>(worker, 'failed');
  const job = await queue.add('pay', { n: 1 });
  const [failedJob, err, prev] = await failed;
  assert.equal(failedJob?.id, job.id);
  assert.equal(prev, 'active');
  assert.equal(err, thrown, 'the thrown error itself');
  assert.equal(err.name, 'PaymentDeclined');
  assert.equal((err as PaymentDeclined).code, 'CARD_DECLINED');
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.failedReason, 'declined 1');
  assert.deepEqual(stored?.stacktrace, [err.stack]);

  // a thrown value that is no Error: an Error of its text, as the job's reason
  const plainFailed = nextEvent<[Job | undefined, Error, string]>(worker, 'failed');
  const plain = await queue.add('pay', { plain: true });
  const [, plainErr] = await plainFailed;
  assert.ok(plainErr instanceof Error);
  assert.equal(plainErr.message, 'not an Error');
  assert.equal((await queue.getJob(plain.id))?.failedReason, 'not an Error');
});

test("a thread processor's thrown error reaches `failed` with its name, message, stack and code", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('thread-failed', env);
  t.after(() => queue.close());
  const worker = new Worker('thread-failed', PROCESSOR, { ...env, concurrency: 1, threads: 1 });
  t.after(() => worker.close());
  const failed = nextEvent<[Job | undefined, Error, string]>(worker, 'failed');
  const job = await queue.add('pay', { mode: 'coded', n: 2 });
  const [failedJob, err] = await failed;
  assert.equal(failedJob?.id, job.id);
  assert.ok(err instanceof ProcessorThreadError);
  assert.equal(err.name, 'PaymentDeclined');
  assert.equal(err.message, 'declined 2');
  assert.equal(err.code, 'CARD_DECLINED');
  assert.match(err.stack ?? '', /threaded\.mjs/, "the thread's stack");
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.failedReason, 'declined 2');
  assert.deepEqual(stored?.stacktrace, [err.stack]);
});
