import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UnrecoverableError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

/** Documented bound on how late a delayed job (or a retry after its backoff) may start on a busy 2-core machine. */
const LATE_BOUND_MS = 1500;

test('retries: fixed and exponential backoff, then success; exhausted attempts fail with the reason', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('retry', env);
  t.after(() => queue.close());
  const starts = new Map<string, number[]>();
  const worker = new Worker(
    'retry',
    async (job) => {
      const list = starts.get(job.id) ?? [];
      list.push(Date.now());
      starts.set(job.id, list);
      if (job.data.kind === 'unrecoverable') throw new UnrecoverableError('no point');
      if (job.data.kind === 'always' || list.length < 3) throw new Error(`attempt ${list.length} failed`);
      return 'ok';
    },
    { ...env, concurrency: 4, stalledInterval: 1000 },
  );
  t.after(() => worker.close());
  const fixed = await queue.add('f', { kind: 'third-time' }, { attempts: 3, backoff: 300 });
  const expo = await queue.add(
    'e',
    { kind: 'third-time' },
    { attempts: 3, backoff: { type: 'exponential', delay: 200 } },
  );
  const always = await queue.add('a', { kind: 'always' }, { attempts: 2 });
  const unrec = await queue.add('u', { kind: 'unrecoverable' }, { attempts: 5 });
  await waitFor(
    async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed === 2 && c.failed === 2;
    },
    { timeoutMs: 30_000, what: '2 completed, 2 failed' },
  );
  const gaps = (id: string) => {
    const s = starts.get(id) ?? [];
    return s.slice(1).map((v, i) => v - (s[i] as number));
  };
  for (const g of gaps(fixed.id)) assert.ok(g >= 300 && g < 300 + LATE_BOUND_MS, `fixed gap ${g}`);
  const [e1, e2] = gaps(expo.id) as [number, number];
  assert.ok(e1 >= 200 && e1 < 200 + LATE_BOUND_MS, `exponential gap 1: ${e1}`);
  assert.ok(e2 >= 400 && e2 < 400 + LATE_BOUND_MS, `exponential gap 2: ${e2}`);
  const f = await queue.getJob(fixed.id);
  assert.equal(f?.returnvalue, 'ok');
  assert.equal(f?.attemptsMade, 3);
  const a = await queue.getJob(always.id);
  assert.equal(await a?.getState(), 'failed');
  assert.equal(a?.failedReason, 'attempt 2 failed');
  assert.equal(a?.attemptsMade, 2);
  assert.ok((a?.stacktrace.length ?? 0) >= 1);
  const u = await queue.getJob(unrec.id);
  assert.equal(u?.attemptsMade, 1);
  assert.equal(u?.failedReason, 'no point');
});

test('delayed jobs start no earlier than due, and close to it', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('delay', env);
  t.after(() => queue.close());
  const started = new Map<string, number>();
  const worker = new Worker(
    'delay',
    async (job) => {
      started.set(job.id, Date.now());
    },
    { ...env, concurrency: 5 },
  );
  t.after(() => worker.close());
  const jobs = await Promise.all([300, 700, 1200, 0].map((delay) => queue.add('d', { delay }, { delay })));
  assert.equal(await jobs[0]?.getState(), 'delayed');
  await waitFor(() => started.size === jobs.length, { timeoutMs: 20_000, what: 'all delayed jobs ran' });
  for (const job of jobs) {
    const due = job.timestamp + job.delay;
    const at = started.get(job.id) as number;
    assert.ok(at >= due, `job delayed ${job.delay} ms started ${due - at} ms early`);
    assert.ok(at - due < LATE_BOUND_MS, `job delayed ${job.delay} ms started ${at - due} ms late`);
  }
});

test('priorities: none first, then lower numbers first, FIFO within each, across buckets; lifo', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('prio', env);
  t.after(() => queue.close());
  const order: string[] = [];
  const expected: string[] = [];
  const batch = async (n: number, priority: number) =>
    (
      await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: `p${priority}`, data: i, opts: { priority } })))
    ).map((j) => j.id);
  const p2 = await batch(2100, 2); // more than one bucket
  const p0 = await batch(30, 0);
  const p1 = await batch(40, 1);
  const lifo = [];
  for (let i = 0; i < 3; i++) lifo.push((await queue.add('l', i, { lifo: true })).id);
  expected.push(...lifo.reverse(), ...p0, ...p1, ...p2);
  const worker = new Worker(
    'prio',
    async (job) => {
      order.push(job.id);
    },
    { ...env, concurrency: 1, removeOnComplete: { count: 10 } },
  );
  t.after(() => worker.close());
  await waitFor(() => order.length === expected.length, { timeoutMs: 120_000, what: 'all ran' });
  assert.deepEqual(order, expected);
});

test('a custom jobId added concurrently from several producers makes exactly one job', async (t) => {
  const env = await queueEnv(t);
  const queues = Array.from({ length: 4 }, () => new Queue('dedupe', env));
  t.after(() => Promise.all(queues.map((q) => q.close())));
  const results = await Promise.all(
    queues.flatMap((q, qi) => Array.from({ length: 10 }, (_, i) => q.add('d', { qi, i }, { jobId: 'order-42' }))),
  );
  const first = await queues[0]?.getJob('order-42');
  assert.ok(first);
  for (const r of results) {
    assert.equal(r.id, 'order-42');
    assert.deepEqual(r.data, first.data, 'every caller gets the one stored job');
  }
  assert.equal((await queues[0]?.getJobCounts('waiting'))?.waiting, 1);
  const bulk = await queues[1]?.addBulk([
    { name: 'd', data: 'new', opts: { jobId: 'order-43' } },
    { name: 'd', data: 'dup', opts: { jobId: 'order-42' } },
  ]);
  assert.deepEqual(
    bulk?.map((j) => j.data),
    ['new', first.data],
  );
  assert.equal((await queues[0]?.getJobCounts('waiting'))?.waiting, 2);
});

test('retention: removeOnComplete/removeOnFail bound what is kept', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('keep', env);
  t.after(() => queue.close());
  const worker = new Worker(
    'keep',
    async (job) => {
      if (job.data.fail) throw new Error('nope');
    },
    { ...env, concurrency: 5 },
  );
  t.after(() => worker.close());
  await queue.addBulk(
    Array.from({ length: 30 }, (_, i) => ({ name: 'c', data: { i }, opts: { removeOnComplete: 5 } })),
  );
  await queue.addBulk(
    Array.from({ length: 5 }, (_, i) => ({ name: 'f', data: { fail: true, i }, opts: { removeOnFail: true } })),
  );
  const kept = await queue.addBulk([{ name: 'f', data: { fail: true }, opts: { removeOnFail: { count: 10 } } }]);
  await waitFor(async () => (await queue.getJobCounts('failed')).failed === 1, { what: 'one failed kept' });
  await waitFor(async () => ((await queue.getJobCounts('completed')).completed ?? 0) <= 5, {
    timeoutMs: 20_000,
    what: 'completed trimmed to 5',
  });
  assert.equal((await queue.getJob(kept[0]!.id))?.failedReason, 'nope');
  const completed = await queue.getCompleted();
  assert.ok(completed.length <= 5 && completed.length > 0);
  for (const j of completed) assert.equal(j.data.i >= 0, true, 'kept jobs keep their data');
});
