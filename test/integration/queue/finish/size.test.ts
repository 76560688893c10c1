/**
 * A finish is never lost to its size: a huge error is cut and retried as
 * usual, a stack trace history stays bounded in bytes, a `failed` event
 * carries a cut reason, and a result too large to store fails the job at
 * once (never left active to run again once its lease runs out).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_REASON_BYTES, MAX_RECORD_BYTES, MAX_STACK_BYTES, Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { type Job, Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import {
  assertCutReason,
  assertNumberedLogs,
  assertStackHistoryBounded,
  bigStackError,
  bytes,
  FAST,
  failedEventsOf,
  pastALease,
} from '../../../helpers/finish-size.js';
import { flowEnv } from '../../../helpers/flows.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

async function recordBytes(
  env: { connection: { connectionString: string }; prefix: string },
  queue: string,
  id: string,
) {
  const session = await Session.connect({ ...env.connection, namespace: env.prefix });
  try {
    return (await session.getData(new QueueLayout(queue).job(id))).data.length;
  } finally {
    await session.close();
  }
}

test('a processor throwing a 300 KB error is retried as its attempts say and fails with the real reason, cut', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('huge-error', env);
  t.after(() => queue.close());
  let runs = 0;
  const message = `boom ${'x'.repeat(300 * 1024)}`;
  const worker = new Worker(
    'huge-error',
    async () => {
      runs++;
      throw new Error(message);
    },
    { ...env, ...FAST },
  );
  t.after(() => worker.close());
  const lost: string[] = [];
  worker.on('lost', (job) => lost.push(job.id));
  const job = await queue.add('e', {}, { attempts: 3 });
  await waitFor(async () => (await queue.getJobState(job.id)) === 'failed', {
    timeoutMs: 30_000,
    what: 'the job failed',
  });
  const failed = await queue.getJob(job.id);
  assert.equal(runs, 3, 'ran once per attempt');
  assert.equal(failed?.attemptsMade, 3);
  assert.equal(failed?.stalledCounter, 0);
  assert.deepEqual(lost, []);
  const reason = failed?.failedReason ?? '';
  assertCutReason(reason, 'boom xxx');
  assert.equal(failed?.stacktrace.length, 3);
  for (const s of failed?.stacktrace ?? []) assert.ok(bytes(s) <= MAX_STACK_BYTES, `stack ${bytes(s)} bytes`);
  assert.ok((await recordBytes(env, 'huge-error', job.id)) < MAX_RECORD_BYTES);
});

test('many retries with big stacks keep a stack trace history bounded in bytes', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('big-stacks', env);
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'big-stacks',
    async () => {
      runs++;
      throw bigStackError(runs);
    },
    { ...env, ...FAST, concurrency: 1 },
  );
  t.after(() => worker.close());
  const job = await queue.add('s', {}, { attempts: 25, stackTraceLimit: 100 });
  await waitFor(async () => (await queue.getJobState(job.id)) === 'failed', {
    timeoutMs: 60_000,
    what: 'the job failed',
  });
  const failed = await queue.getJob(job.id);
  assert.equal(runs, 25);
  assert.equal(failed?.attemptsMade, 25);
  assert.equal(failed?.failedReason, 'attempt 25');
  const stacks = failed?.stacktrace ?? [];
  assertStackHistoryBounded(stacks);
  assert.ok(stacks[0]?.startsWith('Error: attempt 25'), 'newest first');
});

test('a failed event with a huge reason reaches a QueueEvents, cut, and the job fails once', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('huge-event', env);
  t.after(() => queue.close());
  const failedEvents = await failedEventsOf(t, new QueueEvents('huge-event', env));
  let runs = 0;
  const worker = new Worker(
    'huge-event',
    async () => {
      runs++;
      const err = new Error('short');
      err.message = 'r'.repeat(200 * 1024); // a small stack, a huge reason
      throw err;
    },
    { ...env, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('e', {});
  await waitFor(() => failedEvents.some((e) => e.jobId === job.id), { timeoutMs: 30_000, what: 'the failed event' });
  const event = failedEvents.find((e) => e.jobId === job.id);
  assert.ok(event?.failedReason.startsWith('rrrr'));
  assert.ok(bytes(event?.failedReason) <= MAX_REASON_BYTES);
  assert.equal(await queue.getJobState(job.id), 'failed');
  assert.equal(runs, 1);
});

test('a return value too large to store fails the job at once with a short reason, ran once', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('huge-result', env);
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'huge-result',
    async () => {
      runs++;
      return { blob: 'v'.repeat(MAX_RECORD_BYTES) };
    },
    { ...env, ...FAST },
  );
  t.after(() => worker.close());
  const reported: { event: string; reason?: string }[] = [];
  worker.on('completed', () => reported.push({ event: 'completed' }));
  worker.on('failed', (_job, err) => reported.push({ event: 'failed', reason: err.message }));
  worker.on('lost', () => reported.push({ event: 'lost' }));
  const job = await queue.add('r', {}, { attempts: 3 });
  await waitFor(async () => (await queue.getJobState(job.id)) === 'failed', {
    timeoutMs: 30_000,
    what: 'the job failed',
  });
  const failed = await queue.getJob(job.id);
  assert.match(failed?.failedReason ?? '', /^PayloadTooLargeError: result too large/);
  assert.ok(bytes(failed?.failedReason) < 1024);
  assert.equal(failed?.returnvalue, undefined);
  assert.equal(failed?.attemptsMade, 1);
  await waitFor(() => reported.length > 0, { timeoutMs: 10_000, what: 'the worker reported' });
  assert.equal(reported[0]?.event, 'failed');
  assert.match(reported[0]?.reason ?? '', /^PayloadTooLargeError: result too large/);
  // no second run once a lease has passed
  await pastALease();
  assert.equal(runs, 1);
  assert.equal(await queue.getJobState(job.id), 'failed');
});

test('a flow child whose return value fits its record but not twice (record and parent entry) fails at once, ran once; a smaller one reaches the parent', async (t) => {
  const {
    env,
    flows,
    queues: { 'big-parent': parents },
  } = await flowEnv(t, 'big-parent');
  let runs = 0;
  // multi-byte characters: 2 bytes each in the record and in the entry
  const children = new Worker(
    'big-child',
    async (job) => {
      runs++;
      return 'é'.repeat(job.data.chars);
    },
    { ...env, ...FAST },
  );
  const values: unknown[] = [];
  const parent = new Worker('big-parent', async (job) => void values.push(await job.getChildrenValues()), env);
  t.after(() => Promise.all([children.close(), parent.close()]));
  const over = MAX_RECORD_BYTES / 2 - 2048; // 508 KiB of JSON: under the record limit, not twice in a transaction
  const tree = await flows.add({
    name: 'p',
    queueName: 'big-parent',
    data: {},
    children: [{ name: 'c', queueName: 'big-child', data: { chars: over } }],
  });
  const child = tree.children?.[0]?.job as Job;
  const childQueue = new Queue('big-child', env);
  t.after(() => childQueue.close());
  await waitFor(async () => (await childQueue.getJobState(child.id)) === 'failed', {
    timeoutMs: 30_000,
    what: 'the child failed',
  });
  assert.match((await childQueue.getJob(child.id))?.failedReason ?? '', /^PayloadTooLargeError: result too large/);
  await pastALease();
  assert.equal(runs, 1, 'never run again');
  assert.equal(await parents.getJobState(tree.job.id), 'waiting-children', 'its parent waits as for any failed child');
  // 400 KB of JSON fits twice: the parent gets it whole
  const fits = await flows.add({
    name: 'p',
    queueName: 'big-parent',
    data: {},
    children: [{ name: 'c', queueName: 'big-child', data: { chars: 200_000 } }],
  });
  await waitFor(async () => (await parents.getJobState(fits.job.id)) === 'completed', {
    timeoutMs: 30_000,
    what: 'the parent of the smaller value completed',
  });
  const [got] = Object.values(values[0] as Record<string, string>);
  assert.equal(got, 'é'.repeat(200_000));
});

test('700 log lines of 1 KB then a return: completed once, every line readable, none in the record', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('many-logs', env);
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'many-logs',
    async (job) => {
      runs++;
      for (let i = 0; i < 700; i++) await job.log(`${i} ${'l'.repeat(1024)}`);
      return 'done';
    },
    { ...env, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('l', {}, { attempts: 3 });
  const few = await queue.add('l', {}, { keepLogs: 5 });
  await waitFor(
    async () => (await queue.getJobState(job.id)) === 'completed' && (await queue.getJobState(few.id)) === 'completed',
    { timeoutMs: 30_000, what: 'both jobs completed' },
  );
  const done = await queue.getJob(job.id);
  assert.equal(done?.returnvalue, 'done');
  assert.equal(done?.attemptsMade, 1);
  const logs = (await done?.getLogs()) ?? [];
  assertNumberedLogs(logs, 700);
  assert.ok((await recordBytes(env, 'many-logs', job.id)) < 4096, 'the lines live apart from the record');
  const fewLogs = (await (await queue.getJob(few.id))?.getLogs()) ?? [];
  assert.deepEqual(
    fewLogs.map((l) => Number(l.split(' ')[0])),
    [695, 696, 697, 698, 699],
  );
  await pastALease();
  assert.equal(runs, 2, 'each job ran once');
});

test('a completed event leaves out a return value over its byte cap (multi-byte characters counted as bytes)', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('event-cap', env);
  t.after(() => queue.close());
  const events = new QueueEvents('event-cap', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  const completed = new Map<string, unknown>();
  events.on('completed', (e) => completed.set(e.jobId, e.returnvalue));
  const value = 'é'.repeat(10_000); // 10,000 characters, 20,000 bytes
  const worker = new Worker('event-cap', async (job) => (job.data.big ? value : 'small'), { ...env });
  t.after(() => worker.close());
  const big = await queue.add('b', { big: true });
  const small = await queue.add('s', { big: false });
  await waitFor(() => completed.has(big.id) && completed.has(small.id), { timeoutMs: 20_000, what: 'both events' });
  assert.deepEqual(completed.get(big.id), { truncated: true, bytes: Buffer.byteLength(JSON.stringify(value)) });
  assert.equal(completed.get(small.id), 'small');
  assert.equal((await queue.getJob(big.id))?.returnvalue, value, 'the job keeps it');
});

test('a retry too large with its progress and stack is written without them: retries still apply to a job with large data', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('lean-retry', env);
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'lean-retry',
    async (job) => {
      runs++;
      await job.updateProgress({ p: 'p'.repeat(60 * 1024) });
      if (runs === 1) throw new Error('first attempt fails');
      return 'second attempt';
    },
    { ...env, ...FAST },
  );
  t.after(() => worker.close());
  const job = await queue.add('d', { blob: 'd'.repeat(460 * 1024) }, { attempts: 2 });
  await waitFor(async () => (await queue.getJobState(job.id)) === 'completed', {
    timeoutMs: 30_000,
    what: 'the job completed on its second attempt',
  });
  const done = await queue.getJob(job.id);
  assert.equal(runs, 2);
  assert.equal(done?.returnvalue, 'second attempt');
  assert.equal(done?.attemptsMade, 2);
  assert.equal(done?.failedReason, 'first attempt fails');
  assert.ok((await recordBytes(env, 'lean-retry', job.id)) < MAX_RECORD_BYTES);
});
