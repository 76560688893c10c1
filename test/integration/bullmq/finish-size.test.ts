/**
 * BullMQ's own Worker on the ZooKeeper backend: a finish is never lost to
 * its size. A huge error is cut and retried as its attempts say, a stack
 * trace history stays bounded in bytes, a `failed` event carries a cut
 * reason, and a result too large to store fails the job at once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { MAX_REASON_BYTES, MAX_RECORD_BYTES, MAX_STACK_BYTES } from '@zkq/core';
import { withBackend } from 'bullmq';
import {
  assertCutReason,
  assertNumberedLogs,
  assertStackHistoryBounded,
  bigStackError,
  bytes,
  FAST,
  failedEventsOf,
  pastALease,
} from '../../helpers/finish-size.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, QueueEvents, Worker } = withBackend(createZooKeeperBackend);

test('BullMQ Worker: a 300 KB error is retried as its attempts say, then fails with the real reason, cut', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('huge-error', { connection });
  t.after(() => queue.close());
  const failedEvents = await failedEventsOf(t, new QueueEvents('huge-error', { connection }));
  let runs = 0;
  const worker = new Worker(
    'huge-error',
    async () => {
      runs++;
      throw new Error(`boom ${'x'.repeat(300 * 1024)}`);
    },
    { connection, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('e', {}, { attempts: 3 });
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'failed', {
    timeoutMs: 30_000,
    what: 'the job failed',
  });
  const failed = await queue.getJob(job.id as string);
  assert.equal(runs, 3, 'ran once per attempt');
  assert.equal(failed?.attemptsMade, 3);
  assert.equal(failed?.stalledCounter, 0);
  const reason = failed?.failedReason ?? '';
  assertCutReason(reason, 'boom xxx');
  assert.ok((failed?.stacktrace?.length ?? 0) >= 1);
  for (const s of failed?.stacktrace ?? []) assert.ok(bytes(s) <= MAX_STACK_BYTES);
  await waitFor(() => failedEvents.some((e) => e.jobId === job.id), { timeoutMs: 10_000, what: 'the failed event' });
  for (const e of failedEvents) assert.ok(bytes(e.failedReason) <= MAX_REASON_BYTES);
});

test('BullMQ Worker: many retries with big stacks keep a stack trace history bounded in bytes', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('big-stacks', { connection });
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'big-stacks',
    async () => {
      runs++;
      throw bigStackError(runs);
    },
    { connection, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('s', {}, { attempts: 25, stackTraceLimit: 100 });
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'failed', {
    timeoutMs: 60_000,
    what: 'the job failed',
  });
  const failed = await queue.getJob(job.id as string);
  assert.equal(runs, 25);
  assert.equal(failed?.failedReason, 'attempt 25');
  assertStackHistoryBounded(failed?.stacktrace ?? []);
});

test('BullMQ Worker: a return value too large to store fails the job at once with a short reason, ran once', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('huge-result', { connection });
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'huge-result',
    async () => {
      runs++;
      return { blob: 'v'.repeat(MAX_RECORD_BYTES) };
    },
    { connection, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('r', {}, { attempts: 3 });
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'failed', {
    timeoutMs: 30_000,
    what: 'the job failed',
  });
  const failed = await queue.getJob(job.id as string);
  assert.match(failed?.failedReason ?? '', /^PayloadTooLargeError: result too large/);
  assert.equal(failed?.attemptsMade, 1);
  // no second run once a lease has passed
  await pastALease();
  assert.equal(runs, 1);
  assert.equal(await queue.getJobState(job.id as string), 'failed');
});

test('BullMQ Worker: 700 log lines of 1 KB then a return: completed once, every line readable', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('many-logs', { connection });
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'many-logs',
    async (job) => {
      runs++;
      for (let i = 0; i < 700; i++) await job.log(`${i} ${'l'.repeat(1024)}`);
      return 'done';
    },
    { connection, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('l', {}, { attempts: 3 });
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed', {
    timeoutMs: 30_000,
    what: 'the job completed',
  });
  const done = await queue.getJob(job.id as string);
  assert.equal(done?.returnvalue, 'done');
  assert.equal(done?.attemptsMade, 1);
  const { logs, count } = await queue.getJobLogs(job.id as string);
  assert.equal(count, 700);
  assertNumberedLogs(logs, 700);
  await pastALease();
  assert.equal(runs, 1);
});
