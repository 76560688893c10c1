/**
 * `@zkq/worker/metrics` (workerMetrics) against a real ZooKeeper: per-worker
 * counters, histogram and gauges, and the queue depth per state reported once
 * per queue (by its leader), so that summing every worker's scrape counts
 * each job once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { workerMetrics } from '@zkq/worker/metrics';
import { Registry } from 'prom-client';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a registry's text (enough of the format for these metrics). */
async function scrape(registry: Registry): Promise<Sample[]> {
  const text = await registry.metrics();
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(l);
      assert.ok(m, l);
      const labels = Object.fromEntries(
        [...(m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1] as string, x[2] as string]),
      );
      return { name: m[1] as string, labels, value: Number(m[3]) };
    });
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

test('per-worker counters, durations and gauges, several workers in one registry', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('pm-counts', env);
  t.after(() => queue.close());
  const registry = new Registry();
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  const workers = ['w1', 'w2'].map(
    (name) =>
      new Worker(
        'pm-counts',
        async (job) => {
          if (job.name === 'hold') await held;
          if (job.name === 'bad') throw new Error('no');
          return null;
        },
        { ...env, name, concurrency: 5, drainDelay: 1 },
      ),
  );
  const handles = workers.map((w) => workerMetrics(w, { registry }));
  t.after(() => Promise.all(workers.map((w) => w.close())));
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  await waitFor(() => handles.every((h) => h.isConnected()), { what: 'connected' });
  await queue.addBulk([
    ...Array.from({ length: 6 }, () => ({ name: 'ok', data: {} })),
    ...Array.from({ length: 2 }, () => ({ name: 'bad', data: {} })),
    { name: 'hold', data: {} },
  ]);
  await waitFor(async () => {
    const s = await scrape(registry);
    const sum = (name: string) =>
      s.filter((x) => x.name === name && x.labels.queue === 'pm-counts').reduce((a, b) => a + b.value, 0);
    return sum('zkq_jobs_completed_total') === 6 && sum('zkq_jobs_failed_total') === 2 && sum('zkq_jobs_active') === 1;
  });
  let s = await scrape(registry);
  for (const w of workers) {
    const labels = { queue: 'pm-counts', worker: w.id };
    assert.equal(value(s, 'zkq_zookeeper_connected', labels), 1);
    assert.notEqual(value(s, 'zkq_jobs_stalled_total', labels), undefined);
    assert.notEqual(value(s, 'zkq_jobs_lost_total', labels), undefined);
  }
  const durations = s.filter((x) => x.name === 'zkq_job_duration_seconds_count').reduce((a, b) => a + b.value, 0);
  assert.equal(durations, 8);
  release();
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 7);
  // stop() takes a worker's series away; a closed worker reads as disconnected
  handles[0]?.stop();
  await Promise.all(workers.map((w) => w.close()));
  s = await scrape(registry);
  assert.equal(value(s, 'zkq_jobs_completed_total', { worker: workers[0]?.id as string }), undefined);
  assert.equal(value(s, 'zkq_zookeeper_connected', { worker: workers[1]?.id as string }), 0);
  assert.equal(handles[1]?.isConnected(), false);
});

test('queue depth per state comes from the leader only: summing all scrapes counts each job once', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('pm-depth', env);
  t.after(() => queue.close());
  await queue.addBulk([
    ...Array.from({ length: 4 }, () => ({ name: 'later', data: {}, opts: { delay: 600_000 } })),
    ...Array.from({ length: 3 }, () => ({ name: 'now', data: {} })),
    { name: 'bad', data: {} },
  ]);
  const registries = [new Registry(), new Registry(), new Registry()];
  const workers = registries.map((registry, i) => {
    const w = new Worker(
      'pm-depth',
      async (job) => {
        if (job.name === 'bad') throw new Error('no');
      },
      { ...env, name: `d${i}`, drainDelay: 1 },
    );
    workerMetrics(w, { registry });
    return w;
  });
  t.after(() => Promise.all(workers.map((w) => w.close())));
  await waitFor(async () => {
    const c = await queue.getJobCounts('completed', 'failed');
    return c.completed === 3 && c.failed === 1;
  });
  await waitFor(() => workers.some((w) => w.isLeader), { what: 'a leader' });
  const scrapes = await Promise.all(registries.map(scrape));
  const reporting = scrapes.filter((s) => s.some((x) => x.name === 'zkq_queue_depth'));
  assert.equal(reporting.length, 1, 'one worker of the queue reports its depth');
  const depth = (state: string) =>
    scrapes
      .flat()
      .filter((x) => x.name === 'zkq_queue_depth' && x.labels.state === state)
      .reduce((a, b) => a + b.value, 0);
  const counts = await queue.getJobCounts();
  for (const state of ['waiting', 'delayed', 'completed', 'failed', 'active', 'paused', 'prioritized']) {
    assert.equal(depth(state), counts[state], `${state}: summed over every scrape, counted once`);
  }
  assert.equal(depth('delayed'), 4);
  assert.equal(depth('completed'), 3);
  assert.equal(depth('failed'), 1);
  const sample = scrapes.flat().find((x) => x.name === 'zkq_queue_depth');
  assert.deepEqual(Object.keys(sample?.labels ?? {}).sort(), ['queue', 'state'], 'no worker label');
});

test("queueDepth: 'always' reports from this worker, false never", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('pm-always', env);
  t.after(() => queue.close());
  await queue.add('later', {}, { delay: 600_000 });
  const always = new Registry();
  const never = new Registry();
  const w = new Worker('pm-always', async () => null, { ...env, housekeeping: false, drainDelay: 1 });
  t.after(() => w.close());
  workerMetrics(w, { registry: always, queueDepth: 'always' });
  workerMetrics(w, { registry: never, queueDepth: false });
  await w.waitUntilReady();
  assert.equal(value(await scrape(always), 'zkq_queue_depth', { state: 'delayed' }), 1);
  assert.equal(value(await scrape(never), 'zkq_queue_depth'), undefined);
  assert.throws(() => workerMetrics(w, { queueDepth: 'sometimes' as 'always' }), { code: 'ZKQ_INVALID_ARGUMENT' });
});
