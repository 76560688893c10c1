/**
 * Cancelling a job reaches the process that runs it: zkq's Worker in another
 * process, cancelled from this one by zkq's Queue and by @zkq/bullmq's
 * cancelJob; a job not running is refused and nothing is written; a
 * cancelled attempt retries, and its next attempt is cancelled by a request
 * of its own; idle workers set no watch, and a busy one watches only its own
 * directory.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cancelJob, createZooKeeperBackend } from '@zkq/bullmq';
import { InvalidArgumentError } from '@zkq/core';
import { MAX_CANCEL_REASON_BYTES, QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { spawnFixture } from '../../helpers/process.js';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/queue/cancel-worker.ts', import.meta.url));

/** Waits until job `id` has failed, and resolves with its reason. */
async function failedReason(queue: Queue, id: string): Promise<string> {
  const job = await waitFor(
    async () => {
      const j = await queue.getJob(id);
      // the state is read after the job: read the job again once it says failed
      return j && (await j.getState()) === 'failed' ? await queue.getJob(id) : undefined;
    },
    { what: `job ${id} to fail` },
  );
  return job.failedReason as string;
}

test('a job running in another process is cancelled from this one, by either front-end', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('far', env);
  t.after(() => queue.close());
  const { Queue: BullQueue } = withBackend(createZooKeeperBackend);
  const bull = new BullQueue('far', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => bull.close());
  const worker = spawnFixture(FIXTURE, [
    JSON.stringify({ ...env.connection, namespace: env.prefix, queue: 'far', frontEnd: 'zkq', name: 'far-zkq' }),
  ]);
  t.after(() => worker.child.kill('SIGKILL'));
  await worker.waitForLine(/^ready$/);

  const a = await queue.add('long', { ms: 60_000 });
  const b = await queue.add('long', { ms: 60_000 });
  await worker.waitForLine(new RegExp(`^started ${a.id}$`));
  await worker.waitForLine(new RegExp(`^started ${b.id}$`));
  assert.equal(await queue.cancelJob(a.id, 'operator asked'), true);
  assert.equal(await cancelJob(bull, b.id, 'asked through BullMQ'), true);

  // the processors saw their signals fire with the reasons, in the other process
  await worker.waitForLine(new RegExp(`^aborted ${a.id} operator asked$`));
  await worker.waitForLine(new RegExp(`^aborted ${b.id} asked through BullMQ$`));
  assert.equal(await failedReason(queue, a.id), 'cancelled: operator asked');
  assert.equal(await failedReason(queue, b.id), 'cancelled: asked through BullMQ');
  // the worker deleted the requests it acted on
  const session = await queue.client;
  const dir = new QueueLayout('far').cancelsOf('far-zkq');
  await waitFor(async () => (await session.getChildren(dir)).length === 0, { what: 'the requests to be deleted' });
});

test('a cancel of a job that is not running returns false and writes nothing', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('idle', env);
  t.after(() => queue.close());
  const waiting = await queue.add('w', {});
  const delayed = await queue.add('d', {}, { delay: 600_000 });
  assert.equal(await queue.cancelJob(waiting.id, 'no'), false);
  assert.equal(await queue.cancelJob(delayed.id), false);
  assert.equal(await queue.cancelJob('no-such-job'), false);
  assert.equal(await queue.getJobState(waiting.id), 'waiting');
  assert.equal(await queue.getJobState(delayed.id), 'delayed');
  const session = await queue.client;
  assert.equal(await session.exists(new QueueLayout('idle').cancelsDir), null);

  await assert.rejects(queue.cancelJob(waiting.id, 42 as unknown as string), InvalidArgumentError);
  await assert.rejects(queue.cancelJob(waiting.id, 'x'.repeat(MAX_CANCEL_REASON_BYTES + 1)), InvalidArgumentError);
  await assert.rejects(queue.cancelJob('a/b'), InvalidArgumentError);
});

test('a cancelled attempt that retries runs again, and a request for the new attempt cancels that one; a processor may ignore its signal', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('again', env);
  t.after(() => queue.close());
  const started: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  t.after(() => release());
  const worker = new Worker(
    'again',
    async (job, _token, signal) => {
      started.push(`${job.id}:${job.attemptsMade}`);
      if (job.data.ignore) {
        await gate; // ignores its signal: it runs on
        return 'ignored';
      }
      await new Promise((_, reject) => {
        signal?.addEventListener('abort', () => reject(new Error(`cancelled: ${signal.reason}`)), { once: true });
      });
    },
    { ...env, name: 'w-again', concurrency: 2, drainDelay: 600 },
  );
  t.after(() => worker.close());
  const retried = await queue.add('r', {}, { attempts: 2 });
  await waitFor(() => started.includes(`${retried.id}:0`), { what: 'the first attempt' });
  assert.equal(await queue.cancelJob(retried.id, 'try again'), true);
  await waitFor(() => started.includes(`${retried.id}:1`), { what: 'the second attempt' });
  assert.equal(await queue.cancelJob(retried.id, 'stop for good'), true);
  assert.equal(await failedReason(queue, retried.id), 'cancelled: stop for good');
  const failed = await queue.getJob(retried.id);
  assert.equal(failed?.attemptsMade, 2);

  const stubborn = await queue.add('s', { ignore: true });
  await waitFor(() => started.includes(`${stubborn.id}:0`), { what: 'the stubborn job' });
  assert.equal(await queue.cancelJob(stubborn.id, 'please'), true);
  const session = await queue.client;
  const dir = new QueueLayout('again').cancelsOf('w-again');
  await waitFor(async () => (await session.getChildren(dir)).length === 0, { what: 'the request to be acted on' });
  assert.equal(await queue.getJobState(stubborn.id), 'active');
  release();
  await waitFor(async () => (await queue.getJobState(stubborn.id)) === 'completed', { what: 'the stubborn job' });
  assert.equal((await queue.getJob(stubborn.id))?.returnvalue, 'ignored');
});

test('no herd: workers holding no job arm no watch; a busy one watches only its own requests', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('herd', env);
  t.after(() => queue.close());
  const started: string[] = [];
  const busy = new Worker(
    'herd',
    async (job, _token, signal) => {
      started.push(job.id);
      await new Promise((_, reject) => {
        signal?.addEventListener('abort', () => reject(new Error(String(signal.reason))), { once: true });
      });
    },
    { ...env, name: 'busy', drainDelay: 600 },
  );
  t.after(() => busy.close(true)); // forced: its job waits on a cancel a failed assertion may never send
  await busy.waitUntilReady();
  const idle = ['idle-1', 'idle-2'].map(
    (name) => new Worker('herd', async () => 'never', { ...env, name, drainDelay: 600, autorun: false }),
  );
  for (const w of idle) {
    t.after(() => w.close());
    void w.run();
    await w.waitUntilReady();
  }
  /** The watches a worker's session has armed on cancel requests (ZooKeeper's wchp lists no child watches). */
  const cancelWatches = async (w: Worker) =>
    (await w.client).armedWatches().filter((k) => k.includes(new QueueLayout('herd').cancelsDir));
  for (const w of [busy, ...idle]) assert.deepEqual(await cancelWatches(w), [], `${w.id} holds no job: no watch`);

  const job = await queue.add('long', {});
  await waitFor(() => started.includes(job.id), { what: 'the busy worker to start the job' });
  // its one watch: where its own requests are filed (an exists-watch until the first request makes the directory)
  const own = new QueueLayout('herd').cancelsOf('busy');
  await waitFor(async () => (await cancelWatches(busy)).length > 0, { what: "the busy worker's watch" });
  assert.deepEqual(await cancelWatches(busy), [`exists:${own}`]);
  for (const w of idle) assert.deepEqual(await cancelWatches(w), []);

  const drained = nextEvent(busy, 'drained');
  assert.equal(await queue.cancelJob(job.id, 'stop'), true);
  await waitFor(async () => (await queue.getJobState(job.id)) === 'failed', { what: 'the job to fail' });
  for (const w of idle) assert.deepEqual(await cancelWatches(w), [], 'idle workers were never woken');
  assert.ok((await cancelWatches(busy)).every((k) => k.endsWith(own)));
  // holding nothing now, it re-arms nothing: a change in its directory ends its last watch
  await drained;
  await (await queue.client).create(`${own}/other-1`);
  await waitFor(async () => (await cancelWatches(busy)).length === 0, { what: 'the last watch to fire, unrenewed' });
});
