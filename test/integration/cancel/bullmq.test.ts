/**
 * Cancellation across processes for BullMQ's classes on the backend: a
 * BullMQ Worker in another process, with `relayCancellation`, has its jobs
 * cancelled by `cancelJob` and by zkq's Queue; a request its Worker never
 * acted on outlives the attempt, never touches the next one, and is swept by
 * the leader's sweep.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cancelJob, createZooKeeperBackend, relayCancellation } from '@zkq/bullmq';
import { InvalidArgumentError } from '@zkq/core';
import { QueueLayout, QueueStore, sweepCancels } from '@zkq/core/internal';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { spawnFixture } from '../../helpers/process.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);
const FIXTURE = fileURLToPath(new URL('../../fixtures/queue/cancel-worker.ts', import.meta.url));

test('a BullMQ Worker in another process, with the relay, has its jobs cancelled from this one', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('far', { connection });
  const zkqQueue = new ZkqQueue('far', env);
  t.after(() => Promise.all([queue.close(), zkqQueue.close()]));
  const worker = spawnFixture(FIXTURE, [
    JSON.stringify({ ...env.connection, namespace: env.prefix, queue: 'far', frontEnd: 'bullmq', name: 'far-bull' }),
  ]);
  t.after(() => worker.child.kill('SIGKILL'));
  await worker.waitForLine(/^ready$/);

  const a = await queue.add('long', { ms: 60_000 });
  const b = await queue.add('long', { ms: 60_000 });
  await worker.waitForLine(new RegExp(`^started ${a.id}$`));
  await worker.waitForLine(new RegExp(`^started ${b.id}$`));
  assert.equal(await cancelJob(queue, a.id as string, 'asked through BullMQ'), true);
  assert.equal(await zkqQueue.cancelJob(b.id as string, 'asked through zkq'), true);

  await worker.waitForLine(new RegExp(`^failed ${a.id} cancelled: asked through BullMQ$`));
  await worker.waitForLine(new RegExp(`^failed ${b.id} cancelled: asked through zkq$`));
  const failedA = await waitFor(async () => {
    const job = await queue.getJob(a.id as string);
    return (await job?.getState()) === 'failed' ? job : undefined;
  });
  assert.equal(failedA.failedReason, 'cancelled: asked through BullMQ');
  assert.equal((await zkqQueue.getJob(b.id as string))?.failedReason, 'cancelled: asked through zkq');
  const session = await zkqQueue.client;
  const dir = new QueueLayout('far').cancelsOf('far-bull');
  await waitFor(async () => (await session.getChildren(dir)).length === 0, { what: 'the requests to be deleted' });

  // a waiting job is not running: refused, nothing written
  await queue.pause();
  const waiting = await queue.add('later', {});
  assert.equal(await cancelJob(queue, waiting.id as string, 'no'), false);
  assert.equal(await queue.getJobState(waiting.id as string), 'waiting');
  await assert.rejects(cancelJob({ backend: {} }, '1'), InvalidArgumentError);
});

test('a request the Worker never acted on is dropped once its attempt ends, and never touches the next attempt', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('stale', { connection });
  const zkqQueue = new ZkqQueue('stale', env);
  t.after(() => Promise.all([queue.close(), zkqQueue.close()]));
  const session = await zkqQueue.client;
  const store = new QueueStore(session, 'stale');
  const noFence = () => [];
  const layout = new QueueLayout('stale');
  const aborted: string[] = [];
  let failFirst!: () => void;
  const first = new Promise<void>((r) => {
    failFirst = r;
  });
  t.after(() => failFirst());
  const started: number[] = [];
  const worker = new Worker(
    'stale',
    async (job, _token, signal) => {
      started.push(job.attemptsMade);
      if (job.attemptsMade === 0) {
        await first;
        throw new Error('first attempt failed by itself');
      }
      await new Promise((_, reject) => {
        signal?.addEventListener(
          'abort',
          () => {
            aborted.push(String(signal.reason));
            reject(new Error(`cancelled: ${signal.reason}`));
          },
          { once: true },
        );
      });
    },
    { connection, name: 'plain' },
  );
  t.after(() => worker.close(true));
  const job = await queue.add('j', {}, { attempts: 2 });
  const id = job.id as string;
  await waitFor(() => started.includes(0), { what: 'the first attempt' });

  // no relay yet: the request is filed, and nobody acts on it
  assert.equal(await cancelJob(queue, id, 'unseen'), true);
  assert.equal((await session.getChildren(layout.cancelsOf('plain'))).length, 1);
  assert.equal(await sweepCancels(store, noFence), 0, 'the attempt still runs: its request stays');

  failFirst();
  await waitFor(() => started.includes(1), { what: 'the second attempt' });
  // the retry took another ready pointer, whose token is 1 again: the old request has the same name,
  // and names the pointer the job left. The relay lists it and drops it, unacted on
  const relay = relayCancellation(worker);
  t.after(() => relay.close());
  await waitFor(async () => (await session.getChildren(layout.cancelsOf('plain'))).length === 0, {
    what: "the ended attempt's request dropped",
  });
  assert.deepEqual(aborted, [], 'the old request never touches the next attempt');
  assert.equal(await cancelJob(queue, id, 'now'), true);
  await waitFor(async () => (await queue.getJobState(id)) === 'failed', { what: 'the second attempt to fail' });
  assert.deepEqual(aborted, ['now']);
  assert.equal((await queue.getJob(id))?.failedReason, 'cancelled: now');
  // the relay deleted the request it acted on
  await waitFor(async () => (await session.getChildren(layout.cancelsOf('plain'))).length === 0);
  assert.equal(await sweepCancels(store, noFence), 0);
  // an empty worker directory goes with the next sweep
  assert.equal(await sweepCancels(store, noFence), 0);
  assert.deepEqual(await session.getChildren(layout.cancelsDir), []);
});
