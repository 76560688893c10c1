/**
 * A finish in flight when the worker's session expires is
 * resolved, not dropped. Nobody else claimed the job, so the worker records
 * (or finds recorded) its result as usual: `completed`, once, and the job
 * never runs twice. The worker talks through a TcpProxy; the session is
 * expired on the server directly.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { expire, nextEvent, waitFor } from '../../../helpers/zk.js';

/** A promise with its resolve function, to hold a processor mid-job. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

/** A queue on the shared server and a worker behind a proxy, its processor held until `release`. */
async function setUp(t: { name: string; after(fn: () => unknown): void }, queueName: string) {
  const env = await queueEnv(t, 2000);
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  const queue = new Queue(queueName, env);
  const started = gate();
  const release = gate();
  let runs = 0;
  const worker = new Worker(
    queueName,
    async () => {
      runs++;
      started.open();
      await release.promise;
      return 'done';
    },
    {
      ...env,
      connection: { ...env.connection, connectionString: proxy.connectionString },
      housekeeping: false,
      lockDuration: 60_000,
    },
  );
  t.after(async () => {
    release.open();
    await worker.close(); // while the proxy still forwards
    await queue.close();
    await proxy.stop();
  });
  const completed: string[] = [];
  const errors: string[] = [];
  worker.on('completed', (job) => completed.push(job.id));
  worker.on('lost', (job) => errors.push(`lost ${job.id}`));
  worker.on('error', (err) => errors.push(`${(err as { code?: string }).code ?? ''} ${err.message}`));
  const job = await queue.add('x', {});
  await started.promise;
  const session = await worker.client;
  return { env, proxy, queue, worker, session, job, release, completed, errors, runs: () => runs };
}

test('finish committed, reply lost, then the session expires: the worker reports completed', async (t) => {
  const s = await setUp(t, 'finish-reply-lost');
  s.proxy.dropReplies(); // the finish reaches the server; its reply never comes back
  s.release.open();
  await waitFor(async () => (await s.queue.getJobState(s.job.id)) === 'completed', { what: 'the finish committed' });
  s.proxy.cut();
  const renewed = nextEvent(s.session, 'reconnected', 30_000);
  await expire(s.session);
  s.proxy.restore();
  await renewed;
  // close() lets the attempt in flight end: with its result recorded, or given up.
  const closed = s.worker.close().then(() => 'closed');
  assert.equal(await Promise.race([closed, sleep(30_000, 'close hung', { ref: false })]), 'closed');
  assert.deepEqual(s.completed, [s.job.id], `the worker reported no completion; it reported: ${s.errors.join('; ')}`);
  assert.equal(s.runs(), 1);
  const stored = await s.queue.getJob(s.job.id);
  assert.equal(stored?.returnvalue, 'done');
  assert.equal(stored?.attemptsMade, 1);
});

test('finish never sent before the session expires: the job still runs once', async (t) => {
  const s = await setUp(t, 'finish-never-sent');
  s.proxy.cut(); // the finish cannot reach the server
  s.release.open();
  const renewed = nextEvent(s.session, 'reconnected', 30_000);
  await expire(s.session);
  s.proxy.restore();
  await renewed;
  await waitFor(() => s.completed.includes(s.job.id), { timeoutMs: 30_000, what: 'the job completed' });
  assert.equal(s.runs(), 1, `the job ran ${s.runs()} times although nobody else claimed it (${s.errors.join('; ')})`);
  const stored = await s.queue.getJob(s.job.id);
  assert.equal(await stored?.getState(), 'completed');
  assert.equal(stored?.attemptsMade, 1);
  assert.equal(stored?.stalledCounter, 0);
  assert.deepEqual(s.completed, [s.job.id]);
});
