/**
 * A worker paused while its claim is on the way to ZooKeeper (the pause
 * flag was asked before the claim was sent) must not start the jobs it gets
 * back after `pause()` resolved: as BullMQ's Worker, `pause()` resolves once
 * the jobs it fetched have finished, and none starts after.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend, type ZooKeeperQueueBackend } from '@zkq/bullmq';
import type { Op } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv, queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const { Queue: BullQueue, Worker: BullWorker } = withBackend(createZooKeeperBackend);

test('a claim in flight when pause() is called: no job starts after pause() resolved', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('pause-in-flight', env);
  t.after(() => queue.close());
  const log: string[] = [];
  const worker = new Worker(
    'pause-in-flight',
    async (job) => {
      log.push(`start ${job.id}`);
      return 'ok';
    },
    { ...env, concurrency: 1, housekeeping: false },
  );
  t.after(() => worker.close());
  worker.on('completed', (job) => log.push(`completed ${job.id}`));
  const session = await worker.client;
  let paused: Promise<void> | undefined;
  const multi = session.multi.bind(session);
  session.multi = ((ops: readonly Op[]) => {
    const claim = ops.some((op) => op.op === 'create' && op.path.includes('/claims/'));
    if (claim && !paused) {
      // the pause comes right after the flag was asked, as the claim goes out
      paused = worker.pause().then(() => {
        log.push('paused');
      });
    }
    return multi(ops);
  }) as typeof session.multi;

  const job = await queue.add('j', {});
  await waitFor(() => paused !== undefined, { what: 'the claim sent' });
  await paused;
  // the claim committed: the job runs to its end, before the pause resolved or (the defect) after it
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed' || undefined, {
    what: 'the job completed',
  });
  await waitFor(() => log.includes(`completed ${job.id}`), { what: 'its completed event' });
  const after = log.slice(log.indexOf('paused'));
  assert.ok(!after.some((e) => e.startsWith('start')), `nothing starts after pause() resolved (${log.join(', ')})`);
});

test('a claim on its way when Queue.pause() resolves does not start its job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('pause-global', env);
  t.after(() => queue.close());
  const started: string[] = [];
  const worker = new Worker(
    'pause-global',
    async (job) => {
      started.push(job.id as string);
      return 'ok';
    },
    { ...env, concurrency: 1, housekeeping: false },
  );
  t.after(() => worker.close());
  const session = await worker.client;
  let sent: Promise<unknown> | undefined;
  const multi = session.multi.bind(session);
  session.multi = ((ops: readonly Op[]) => {
    const claim = ops.some((op) => op.op === 'create' && op.path.includes('/claims/'));
    if (!claim || sent) return multi(ops);
    // the worker asked its pause flag, then the queue is paused before its claim reaches ZooKeeper
    sent = queue.pause().then(() => multi(ops));
    return sent;
  }) as typeof session.multi;

  const job = await queue.add('j', {});
  await waitFor(() => sent !== undefined, { what: 'the claim sent' });
  await (sent as Promise<unknown>).catch(() => undefined);
  const state = await queue.getJobState(job.id as string);
  assert.equal(state, 'waiting', `the job waits in the paused queue (it is ${state}, started: ${started.length})`);
  // nothing was lost or left behind by the claim that failed: resumed, the worker runs the job
  await queue.resume();
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed' || undefined, {
    what: 'the job run after the resume',
  });
  assert.deepEqual(started, [job.id]);
});

test("BullMQ's Worker: a claim on its way when Queue.pause() resolves does not start its job", async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new BullQueue('pause-bull', { connection });
  t.after(() => queue.close());
  const started: string[] = [];
  const worker = new BullWorker('pause-bull', async (job) => void started.push(job.id as string), {
    connection,
    drainDelay: 1,
  });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  const session = await (worker.getBackend() as unknown as ZooKeeperQueueBackend).ctx.shared.get();
  const zkq = new Queue('pause-bull', env);
  t.after(() => zkq.close());
  let sent: Promise<unknown> | undefined;
  const multi = session.multi.bind(session);
  session.multi = ((ops: readonly Op[]) => {
    const claim = ops.some((op) => op.op === 'create' && op.path.includes('/claims/'));
    if (!claim || sent) return multi(ops);
    sent = zkq.pause().then(() => multi(ops));
    return sent;
  }) as typeof session.multi;

  const job = await queue.add('j', {});
  await waitFor(() => sent !== undefined, { what: 'the claim sent' });
  await (sent as Promise<unknown>).catch(() => undefined);
  const state = await queue.getJobState(job.id as string);
  assert.equal(state, 'waiting', `the job waits in the paused queue (it is ${state}, started: ${started.length})`);
  await queue.resume();
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed' || undefined, {
    what: 'the job run after the resume',
  });
  assert.deepEqual(started, [job.id]);
});
