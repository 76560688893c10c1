/**
 * BullMQ's job-level reads on the ZooKeeper backend: logs, isFinished,
 * metrics, the worker and QueueEvents lists, and the flow reads that answer
 * empty (no job has children here). The jobs are run by zkq's own Worker:
 * one store, two front-ends.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue as ZkqQueue, QueueEvents as ZkqQueueEvents } from '@zkq/producer';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

async function bullEnv(t: { name?: string }) {
  const env = await queueEnv(t);
  return { env, connection: { ...env.connection, namespace: env.prefix } };
}

test('logs, isFinished and metrics of jobs a zkq Worker ran, read through BullMQ', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('ran', { connection });
  const zkqQueue = new ZkqQueue('ran', env);
  t.after(() => Promise.all([queue.close(), zkqQueue.close()]));
  const logged = await queue.add('log', { lines: 3 });
  const bad = await queue.add('bad', {});
  const worker = new ZkqWorker(
    'ran',
    async (job) => {
      if (job.name === 'bad') throw new Error('bad job');
      for (let i = 0; i < job.data.lines; i++) await job.log(`line ${i}`);
      return { logged: job.data.lines };
    },
    { ...env, metrics: { maxDataPoints: 60 } },
  );
  await waitFor(async () => (await queue.getJobCounts('completed', 'failed')).failed === 1);
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1);
  await worker.close(); // writes its metrics
  const waiting = await queue.add('later', {});

  assert.deepEqual(await queue.getJobLogs(logged.id as string), { logs: ['line 0', 'line 1', 'line 2'], count: 3 });
  assert.deepEqual(await queue.getJobLogs(logged.id as string, 0, 1), { logs: ['line 0', 'line 1'], count: 3 });
  assert.deepEqual(await queue.getJobLogs(logged.id as string, 0, 0, false), { logs: ['line 2'], count: 3 });
  assert.deepEqual(await queue.getJobLogs(logged.id as string, -2, -1), { logs: ['line 1', 'line 2'], count: 3 });
  assert.deepEqual(await queue.getJobLogs('no-such-job'), { logs: [], count: 0 });

  const backend = queue.getBackend();
  assert.deepEqual(await backend.isFinished(logged.id as string, true), [1, JSON.stringify({ logged: 3 })]);
  assert.equal(await backend.isFinished(logged.id as string), 1);
  assert.deepEqual(await backend.isFinished(bad.id as string, true), [2, 'bad job']);
  assert.equal(await backend.isFinished(waiting.id as string), 0);
  assert.deepEqual(await backend.isFinished(waiting.id as string, true), [0]);
  assert.equal(await backend.isFinished('no-such-job'), -1);
  const [missing, why] = (await backend.isFinished('no-such-job', true)) as [number, string];
  assert.equal(missing, -1);
  assert.match(why, /^Missing key for job .*no-such-job\. isFinished$/);

  // the same series through both front-ends
  const completed = await queue.getMetrics('completed');
  assert.equal(completed.meta.count, 1);
  assert.deepEqual(completed, await zkqQueue.getMetrics('completed'));
  assert.deepEqual(await queue.getMetrics('failed', 0, 5), await zkqQueue.getMetrics('failed', 0, 5));
  const metrics = await queue.exportPrometheusMetrics();
  assert.match(metrics, /bullmq_job_completed_total\{queue="ran"\} 1/);
  assert.match(metrics, /bullmq_job_failed_total\{queue="ran"\} 1/);
  assert.match(metrics, /bullmq_job_count\{queue="ran", state="waiting"\} 1/);
});

test('an empty series reads as BullMQ reads a missing one', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('no-metrics', { connection });
  t.after(() => queue.close());
  assert.deepEqual(await queue.getMetrics('completed'), {
    meta: { count: 0, prevTS: 0, prevCount: 0 },
    data: [],
    count: 0,
  });
});

test('getWorkers lists live workers by name and getQueueEvents the listeners; both go with their sessions', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('seen', { connection });
  t.after(() => queue.close());
  assert.deepEqual(await queue.getWorkers(), []);
  const worker = new ZkqWorker('seen', async () => undefined, { ...env, name: 'worker-1', concurrency: 3 });
  const other = new ZkqWorker('elsewhere', async () => undefined, { ...env, name: 'worker-2' });
  const events = new ZkqQueueEvents('seen', env);
  t.after(() => Promise.all([worker.close(), other.close(), events.close()]));
  await events.waitUntilReady();

  const [seen] = await waitFor(async () => {
    const workers = await queue.getWorkers();
    return workers.length === 1 ? workers : undefined;
  });
  assert.equal(seen?.name, 'seen');
  assert.equal(seen?.rawname, `${env.prefix}:seen:w:worker-1`);
  assert.equal(seen?.rawname?.split(':').pop(), 'worker-1');
  assert.equal(seen?.addr, hostname().replace(/\s+/g, '_'));
  assert.equal(seen?.concurrency, '3');
  assert.equal(await queue.getWorkersCount(), 1);
  const listeners = await queue.getQueueEvents();
  assert.equal(listeners.length, 1);
  assert.equal(listeners[0]?.rawname, `${env.prefix}:seen:qe`);

  await Promise.all([worker.close(), events.close()]);
  await waitFor(async () => (await queue.getWorkersCount()) === 0 && (await queue.getQueueEvents()).length === 0);
});

test('flow and deduplication reads answer empty: no job has children or a deduplication key here', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('plain', { connection });
  t.after(() => queue.close());
  const added = await queue.add('j', {});
  const job = await queue.getJob(added.id as string);
  assert.ok(job);
  assert.deepEqual(await job.getDependencies(), { processed: {}, unprocessed: [], failed: [], ignored: {} });
  assert.deepEqual(await job.getDependencies({ processed: {}, unprocessed: { count: 5 } }), {
    processed: {},
    nextProcessedCursor: 0,
    unprocessed: [],
    nextUnprocessedCursor: 0,
  });
  assert.deepEqual(await job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  assert.deepEqual(await job.getDependenciesCount({ failed: true }), { failed: 0 });
  assert.deepEqual(await job.getChildrenValues(), {});
  assert.deepEqual(await job.getIgnoredChildrenFailures(), {});
  assert.deepEqual(await queue.getDependencies(added.id as string, 'pending', 0, -1), {
    items: [],
    jobs: [],
    total: 0,
  });
  assert.deepEqual(await queue.getDependencies(added.id as string, 'processed', 0, 10), {
    items: [],
    jobs: [],
    total: 0,
  });
  assert.equal(await queue.getDeduplicationJobId('some-key'), null);
});
