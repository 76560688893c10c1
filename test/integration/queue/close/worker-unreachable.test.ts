/**
 * close() of a worker that ZooKeeper no longer answers returns within its
 * bound (`closeTimeout`, 5 s by default) instead of waiting out request
 * timeouts, retries and the session timeout (it took 38 s and more, a minute
 * and a half with a job running); close(true) within about a second. The job
 * it was running is not lost: its claim lapses with the session and another
 * worker runs it. Each bound is asserted with a wide margin: what fails is a
 * hang, not a slow machine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { Worker, type WorkerOptions } from '@zkq/worker';
import { cleanups } from '../../../helpers/cleanups.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

/** Three times the default bound, and far below the hang (38 s and more). */
const DEFAULT_BOUND_WITH_MARGIN_MS = 15_000;

type Ctx = { name?: string; after(fn: () => unknown): void };

/** A worker behind a proxy of its own, running one job that never ends unless aborted. */
async function busyWorker(t: Ctx, opts: Partial<WorkerOptions> = {}) {
  const env = await queueEnv(t);
  const proxy = await TcpProxy.start(env.connection.connectionString);
  const queue = new Queue('q', env);
  const after = cleanups(t);
  after(() => proxy.stop());
  after(() => queue.close());
  const started: string[] = [];
  const worker = new Worker(
    'q',
    async (job, _token, signal) => {
      started.push(job.id as string);
      await new Promise((resolve) => signal?.addEventListener('abort', resolve));
      return 'aborted';
    },
    { ...env, ...opts, connection: { ...env.connection, connectionString: proxy.connectionString } },
  );
  worker.on('error', () => undefined); // the writes it gives up on report here
  after(() => worker.close(true));
  await worker.waitUntilReady();
  const job = await queue.add('j', {});
  await waitFor(() => started.length === 1, { what: 'the job started' });
  return { env, proxy, queue, worker, job };
}

/** How long `close` took, ms. */
async function timed(close: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await close();
  return performance.now() - t0;
}

test('close() over a frozen link returns within its bound, and the job it ran is run again elsewhere', async (t) => {
  const { env, proxy, queue, worker, job } = await busyWorker(t);
  proxy.freeze();
  const took = await timed(() => worker.close());
  assert.ok(took < DEFAULT_BOUND_WITH_MARGIN_MS, `close() took ${Math.round(took)} ms`);
  // its claim lapses with the session (4 s): another worker runs the job
  const other = new Worker('q', async () => 'again', env);
  t.after(() => other.close());
  await waitFor(async () => (await queue.getJob(job.id as string))?.returnvalue === 'again', {
    what: 'the job run again by another worker',
    timeoutMs: 60_000,
  });
});

test('close() with the server out of reach (connections refused) returns within its bound', async (t) => {
  const { proxy, worker } = await busyWorker(t);
  proxy.cut();
  const took = await timed(() => worker.close());
  assert.ok(took < DEFAULT_BOUND_WITH_MARGIN_MS, `close() took ${Math.round(took)} ms`);
});

test('closeTimeout sets the bound; close(true) gives up at once', async (t) => {
  const short = await busyWorker(t, { closeTimeout: 500 });
  short.proxy.freeze();
  // the default bound would take 5 s: a bound of half a second is met well within 4
  const took = await timed(() => short.worker.close());
  assert.ok(took < 4000, `close() with closeTimeout 500 took ${Math.round(took)} ms`);

  const forced = await busyWorker(t);
  forced.proxy.freeze();
  const tookForced = await timed(() => forced.worker.close(true));
  assert.ok(tookForced < 4000, `close(true) took ${Math.round(tookForced)} ms`);
});

test('a close() that began while ZooKeeper answered is bounded once it stops answering', async (t) => {
  const { proxy, worker } = await busyWorker(t);
  const closing = timed(() => worker.close());
  await sleep(300); // close() waits for the job, ZooKeeper answering its probes
  proxy.freeze();
  const took = await closing;
  assert.ok(took < DEFAULT_BOUND_WITH_MARGIN_MS, `close() took ${Math.round(took)} ms`);
});

test('closeTimeout must be a number >= 0', async (t) => {
  const env = await queueEnv(t);
  for (const closeTimeout of [-1, Number.NaN, '5' as unknown as number]) {
    assert.throws(
      () => new Worker('q', async () => 1, { ...env, closeTimeout }),
      (err: unknown) => err instanceof InvalidArgumentError && err.code === 'ZKQ_INVALID_ARGUMENT',
    );
  }
});
