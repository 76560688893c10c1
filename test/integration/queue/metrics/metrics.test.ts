/**
 * Queue metrics against a real ZooKeeper: the Worker's `metrics` option and
 * queue.getMetrics (BullMQ's per-minute series), the bounded storage of the
 * series, and queue.exportPrometheusMetrics.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type MinutePoint, QueueStore, recordMetrics, TRIM_BATCH } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const MINUTE = 60_000;

/** Every job counted in the series lies in the current minute or in one of its points. */
function assertConsistent(m: { meta: { count: number; prevCount: number }; data: number[]; count: number }): void {
  assert.equal(m.count, m.data.length);
  assert.equal(
    m.data.reduce((a, b) => a + b, 0),
    m.meta.prevCount,
  );
}

test('a worker with the metrics option counts completed and failed jobs; getMetrics reads the series', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-basic', env);
  t.after(() => queue.close());
  const empty = await queue.getMetrics('completed');
  assert.deepEqual(empty, { meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 });
  await queue.addBulk([
    ...Array.from({ length: 12 }, (_, i) => ({ name: 'ok', data: { i } })),
    ...Array.from({ length: 5 }, (_, i) => ({ name: 'bad', data: { i } })),
    // retried once, then fails for good: one failed job, not two
    { name: 'bad', data: { i: 99 }, opts: { attempts: 2 } },
  ]);
  const worker = new Worker(
    'm-basic',
    async (job) => {
      if (job.name === 'bad') throw new Error('no');
      return job.data.i;
    },
    { ...env, concurrency: 4, metrics: { maxDataPoints: 60 } },
  );
  const started = Date.now();
  await waitFor(async () => {
    const c = await queue.getJobCounts('completed', 'failed');
    return c.completed === 12 && c.failed === 6;
  });
  await worker.close(); // writes the last counts
  const completed = await queue.getMetrics('completed');
  const failed = await queue.getMetrics('failed');
  assert.equal(completed.meta.count, 12);
  assert.equal(failed.meta.count, 6);
  for (const m of [completed, failed]) {
    assertConsistent(m);
    assert.ok(m.meta.prevTS >= started - MINUTE && m.meta.prevTS <= Date.now(), 'prevTS is a finish time');
  }
});

test('counts are written while the worker runs, not only when it closes', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-live', env);
  t.after(() => queue.close());
  const worker = new Worker('m-live', async () => 'ok', { ...env, metrics: {} });
  t.after(() => worker.close());
  await queue.addBulk(Array.from({ length: 5 }, () => ({ name: 'j', data: {} })));
  await waitFor(async () => (await queue.getMetrics('completed')).meta.count === 5, {
    timeoutMs: 30_000,
    what: 'the counts written by the running worker',
  });
});

test('several workers count every job once, their writes to the one series racing', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-many', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 300 }, (_, i) => ({ name: 'j', data: { i } })));
  const workers = ['a', 'b', 'c'].map(
    (name) =>
      new Worker('m-many', async () => null, { ...env, name, concurrency: 10, metrics: { maxDataPoints: 120 } }),
  );
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 300, { timeoutMs: 60_000 });
  await Promise.all(workers.map((w) => w.close())); // the last writes go at once
  const m = await queue.getMetrics('completed');
  assert.equal(m.meta.count, 300);
  assertConsistent(m);
});

test('without the metrics option nothing is written', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-off', env);
  t.after(() => queue.close());
  await queue.add('j', {});
  const worker = new Worker('m-off', async () => null, env);
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1);
  await worker.close();
  assert.equal((await queue.getMetrics('completed')).meta.count, 0);
  const session = await queue.client;
  assert.equal(await session.exists('/m-off/metrics'), null);
});

test('the series stays bounded: hours that left the window are deleted', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-trim', env);
  t.after(() => queue.close());
  const store = new QueueStore(await queue.client, 'm-trim');
  await store.init();
  const max = 120;
  const t0 = Date.UTC(2024, 0, 1);
  // one job per hour for 30 hours
  for (let h = 0; h < 30; h++) {
    const ts = t0 + h * 60 * MINUTE + 5 * MINUTE;
    await recordMetrics(store, 'completed', [{ minute: Math.floor(ts / MINUTE), n: 1, ts }], max);
  }
  const session = await queue.client;
  const chunks = async () => (await session.getChildren('/m-trim/metrics/completed')).length;
  assert.ok((await chunks()) <= max / 60 + 2, 'at most the window in chunks');
  let m = await queue.getMetrics('completed');
  assert.equal(m.meta.count, 30);
  assert.equal(m.count, max);
  // the jobs of the two hours before the latest one, 60 and 120 points back
  assert.equal(m.data[59], 1);
  assert.equal(m.data[119], 1);
  assert.equal(
    m.data.reduce((a, b) => a + b, 0),
    2,
  );
  // a burst from two workers in one minute, written as one batch, then a late batch of an older minute
  const late = t0 + 30 * 60 * MINUTE;
  const points: MinutePoint[] = [
    { minute: Math.floor(late / MINUTE), n: 7, ts: late },
    { minute: Math.floor(late / MINUTE) + 1, n: 2, ts: late + MINUTE },
  ];
  await recordMetrics(store, 'completed', points, max);
  await recordMetrics(store, 'completed', [{ minute: Math.floor(late / MINUTE) - 1, n: 4, ts: late - MINUTE }], max);
  m = await queue.getMetrics('completed');
  assert.equal(m.meta.count, 43);
  assert.equal(m.meta.prevTS, late + MINUTE);
  assert.equal(m.meta.prevCount, 41);
  assert.deepEqual(m.data.slice(0, 2), [7, 4]);
  assert.deepEqual(await queue.getMetrics('completed', 0, 1), { ...m, data: [7, 4] });
  assert.ok((await chunks()) <= max / 60 + 2);
});

test('a series whose window shrinks by many hours is trimmed over a few writes', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-shrink', env);
  t.after(() => queue.close());
  const session = await queue.client;
  const store = new QueueStore(session, 'm-shrink');
  await store.init();
  const hours = TRIM_BATCH + 50;
  const t0 = Date.UTC(2024, 0, 1);
  const at = (h: number): MinutePoint => {
    const ts = t0 + h * 60 * MINUTE;
    return { minute: Math.floor(ts / MINUTE), n: 1, ts };
  };
  for (let h = 0; h < hours; h++) await recordMetrics(store, 'failed', [at(h)], 60 * (hours + 1));
  const chunks = async () => (await session.getChildren('/m-shrink/metrics/failed')).length;
  assert.equal(await chunks(), hours);
  // a writer with a one-hour window: each write deletes at most TRIM_BATCH chunks
  await recordMetrics(store, 'failed', [at(hours)], 60);
  assert.equal(await chunks(), hours + 1 - TRIM_BATCH);
  await recordMetrics(store, 'failed', [at(hours + 1)], 60);
  assert.ok((await chunks()) <= 2);
  const m = await queue.getMetrics('failed');
  assert.equal(m.meta.count, hours + 2);
  assert.equal(m.count, 60);
  assert.equal(m.data[59], 1, 'the job one hour before the latest');
});

test('a late write does not bring a deleted queue back', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-gone', env);
  t.after(() => queue.close());
  const session = await queue.client;
  const store = new QueueStore(session, 'm-gone');
  await store.init();
  await queue.obliterate();
  const ts = Date.now();
  await assert.rejects(recordMetrics(store, 'failed', [{ minute: Math.floor(ts / MINUTE), n: 1, ts }], 60), {
    code: 'ZK_NO_NODE',
  });
  assert.equal(await session.exists('/m-gone'), null);
});

test('getMetrics and the metrics option refuse bad arguments', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-args', env);
  t.after(() => queue.close());
  await assert.rejects(queue.getMetrics('waiting' as 'completed'), { code: 'ZKQ_INVALID_ARGUMENT' });
  await assert.rejects(queue.getMetrics('completed', 0.5), { code: 'ZKQ_INVALID_ARGUMENT' });
  assert.throws(() => new Worker('m-args', async () => null, { ...env, metrics: { maxDataPoints: 0 } }), {
    code: 'ZKQ_INVALID_ARGUMENT',
  });
});

test("exportPrometheusMetrics: BullMQ's text, counts per state and the totals", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('m-prom', env);
  t.after(() => queue.close());
  await queue.addBulk([
    { name: 'a', data: {} },
    { name: 'b', data: {} },
    { name: 'c', data: {}, opts: { delay: 60_000 } },
    { name: 'd', data: {}, opts: { priority: 3 } },
  ]);
  const text = await queue.exportPrometheusMetrics({ env: 'test "1"' });
  const lines = text.split('\n');
  assert.equal(lines[0], '# HELP bullmq_job_count Number of jobs in the queue by state');
  assert.equal(lines[1], '# TYPE bullmq_job_count gauge');
  assert.ok(lines.includes('bullmq_job_count{queue="m-prom", state="waiting", env="test \\"1\\""} 2'), text);
  assert.ok(lines.includes('bullmq_job_count{queue="m-prom", state="delayed", env="test \\"1\\""} 1'), text);
  assert.ok(lines.includes('bullmq_job_count{queue="m-prom", state="prioritized", env="test \\"1\\""} 1'), text);
  assert.ok(lines.includes('# TYPE bullmq_job_completed_total counter'));
  assert.ok(lines.includes('bullmq_job_completed_total{queue="m-prom", env="test \\"1\\""} 0'), text);
  assert.ok(lines.includes('bullmq_job_failed_total{queue="m-prom", env="test \\"1\\""} 0'), text);
  const plain = await queue.exportPrometheusMetrics();
  assert.ok(plain.split('\n').includes('bullmq_job_count{queue="m-prom", state="active"} 0'), plain);
});
