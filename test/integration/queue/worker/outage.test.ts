/**
 * A worker follows the queue's pause flag after a ZooKeeper outage longer
 * than its session timeout: the watch whose re-arm failed during the outage
 * is armed again, so `queue.pause()` still stops it and `resume()` restarts it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

/** Long enough for a worker that ignores the pause to claim a job it was handed (it takes milliseconds). */
const PAUSE_HOLDS_MS = 3000;
/** How long the outage lasts after the worker's first failed read. */
const OUTAGE_AFTER_LOSS_MS = 5000;

test('a worker still follows queue.pause() after an outage longer than its session timeout', async (t) => {
  const env = await queueEnv(t);
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const queue = new Queue('outage-pause', env);
  t.after(() => queue.close());
  const done: string[] = [];
  const errors: Error[] = [];
  const worker = new Worker('outage-pause', async (job) => job.id, {
    ...env,
    connection: {
      connectionString: proxy.connectionString,
      sessionTimeout: 2000,
      requestTimeout: 1000,
      retry: { maxAttempts: 2 },
    },
    drainDelay: 1,
  });
  t.after(() => worker.close(true));
  worker.on('completed', (job) => done.push(job.id));
  worker.on('error', (err) => errors.push(err));
  await worker.waitUntilReady();
  const first = await queue.add('before', {});
  await waitFor(() => done.includes(first.id), { what: 'a job before the outage' });

  const observer = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  t.after(() => observer.close());
  const workers = new QueueLayout('outage-pause').workersDir;
  proxy.cut();
  await waitFor(async () => (await observer.getChildren(workers)).length === 0, {
    what: 'the server to expire the worker session',
  });
  await waitFor(() => errors.length > 0, { what: 'a failed re-read during the outage' });
  // Stay down a while longer: every read the worker retries meanwhile fails too.
  await sleep(OUTAGE_AFTER_LOSS_MS);
  proxy.restore();
  await waitFor(async () => (await observer.getChildren(workers)).length === 1, {
    what: 'the worker registered again',
  });

  await queue.pause();
  // The worker has seen the pause once it stops taking jobs; give it a moment to read the flag.
  await sleep(500);
  const held = await queue.add('while-paused', {});
  await sleep(PAUSE_HOLDS_MS);
  assert.ok(!done.includes(held.id), 'the worker ran a job while the queue was paused');
  await queue.resume();
  await waitFor(() => done.includes(held.id), { what: 'the held job after resume' });
});
