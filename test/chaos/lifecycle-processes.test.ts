import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { type Fixture, spawnFixture } from '../helpers/process.js';
import { type QueueTestEnv, queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/queue/worker-process.ts', import.meta.url));

function startWorker(t: { after(fn: () => unknown): void }, env: QueueTestEnv, queue: string, extra: object): Fixture {
  const f = spawnFixture(WORKER, [JSON.stringify({ ...env.connection, prefix: env.prefix, queue, ...extra })]);
  t.after(() => {
    f.child.kill('SIGCONT');
    f.child.kill('SIGKILL');
  });
  return f;
}

const startedIds = (f: Fixture) => f.lines.filter((l) => l.startsWith('started ')).map((l) => l.slice(8));

/** A test-side worker that elects itself leader and checks for stalled jobs often. */
function leaderWorker(env: QueueTestEnv, queue: string, extra: object = {}) {
  const seen: string[] = [];
  const worker = new Worker(
    queue,
    async (job) => {
      seen.push(job.id);
      return 'recovered';
    },
    { ...env, concurrency: 5, stalledInterval: 300, lockDuration: 10_000, ...extra },
  );
  return { worker, seen };
}

test('a SIGSTOPped worker: claims revoked after the lease, jobs run elsewhere, late results rejected after SIGCONT', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stop', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 's', data: i })));
  const hung = startWorker(t, env, 'stop', {
    housekeeping: false,
    sessionTimeout: 30_000, // the session outlives the stop: only the lease can free the jobs
    lockDuration: 1500,
    sleepMs: 2500,
    concurrency: 3,
  });
  await waitFor(() => startedIds(hung).length === 3, { what: 'the worker started all 3 jobs' });
  hung.child.kill('SIGSTOP');
  const { worker, seen } = leaderWorker(env, 'stop');
  t.after(() => worker.close());
  const stalled: string[] = [];
  worker.on('stalled', (id) => stalled.push(id));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 3, {
    timeoutMs: 30_000,
    what: 'jobs recovered and completed elsewhere',
  });
  assert.deepEqual(stalled.sort(), jobs.map((j) => j.id).sort());
  hung.child.kill('SIGCONT');
  await Promise.all(jobs.map((j) => hung.waitForLine(new RegExp(`^lost ${j.id}$`), 30_000)));
  assert.equal(hung.lines.filter((l) => l.startsWith('completed ')).length, 0);
  for (const j of jobs) {
    const stored = await queue.getJob(j.id);
    assert.equal(stored?.returnvalue, 'recovered', 'the one recorded completion is the second worker’s');
    assert.equal(stored?.stalledCounter, 1);
  }
  assert.equal(seen.length, 3);
  assert.equal((await queue.getJobCounts('completed')).completed, 3);
});

test('past maxStalledCount a stalled job fails with a reason', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stall-out', env);
  t.after(() => queue.close());
  const job = await queue.add('s', {});
  const hung = startWorker(t, env, 'stall-out', {
    housekeeping: false,
    sessionTimeout: 30_000,
    lockDuration: 1000,
    mode: 'hang',
  });
  await hung.waitForLine(/^started /);
  hung.child.kill('SIGSTOP');
  const { worker, seen } = leaderWorker(env, 'stall-out', { maxStalledCount: 0 });
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobCounts('failed')).failed === 1, { timeoutMs: 30_000, what: 'failed' });
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.failedReason, 'job stalled more than allowable limit');
  assert.deepEqual(seen, [], 'the processor did not run it again');
});

test('killing the leader daemon: another takes over, delayed jobs are promoted once', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('leader', env);
  t.after(() => queue.close());
  const opts = { sessionTimeout: 2000, sleepMs: 10 };
  const a = startWorker(t, env, 'leader', opts);
  await a.waitForLine(/^leader$/);
  const b = startWorker(t, env, 'leader', opts);
  await b.waitForLine(/^ready$/);
  const jobs = await queue.addBulk(
    Array.from({ length: 10 }, (_, i) => ({ name: 'd', data: i, opts: { delay: 1500 } })),
  );
  a.child.kill('SIGKILL');
  await b.waitForLine(/^leader$/, 30_000);
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === jobs.length, {
    timeoutMs: 30_000,
    what: 'all delayed jobs completed',
  });
  const runs = [...startedIds(a), ...startedIds(b)];
  for (const j of jobs) {
    assert.equal(runs.filter((id) => id === j.id).length, 1, `job ${j.id} ran once`);
    assert.equal((await queue.getJob(j.id))?.attemptsStarted, 1);
  }
});

test('batch start: with size 3, no job starts until the third worker joins', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('batch', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 9 }, (_, i) => ({ name: 'b', data: i })));
  const barrier = { name: 'go', size: 3 };
  const first = [startWorker(t, env, 'batch', { barrier }), startWorker(t, env, 'batch', { barrier })];
  await Promise.all(first.map((f) => f.waitForLine(/^ready$/)));
  // Two of three joined: a bounded look that nothing starts.
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(first.flatMap(startedIds), []);
  assert.equal((await queue.getJobCounts('waiting')).waiting, 9);
  const third = startWorker(t, env, 'batch', { barrier });
  const all = [...first, third];
  await Promise.all(all.map((f) => f.waitForLine(/^barrier$/, 30_000)));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 9, { what: 'batch done' });
});

test('pause and resume across processes; QueueEvents sees events from other processes', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('remote', env);
  t.after(() => queue.close());
  const events = new QueueEvents('remote', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  const worker = startWorker(t, env, 'remote', { sleepMs: 20 });
  await worker.waitForLine(/^ready$/);
  await queue.pause();
  const seen: string[] = [];
  for (const name of ['added', 'waiting', 'active', 'completed'] as const) {
    events.on(name, (args: { jobId: string }) => seen.push(`${name} ${args.jobId}`));
  }
  // Writers learn of the listener through a watch: add until an event shows up.
  let job = await queue.add('x', { n: 0 });
  await waitFor(
    async () => {
      if (seen.some((s) => s.startsWith('added'))) return true;
      job = await queue.add('x', { n: 1 });
      return false;
    },
    { intervalMs: 200, what: 'events flowing' },
  );
  await new Promise((r) => setTimeout(r, 800)); // paused: a bounded look that nothing starts
  assert.deepEqual(startedIds(worker), []);
  assert.equal(await queue.isPaused(), true);
  await queue.resume();
  const result = await job.waitUntilFinished(events, 20_000);
  assert.match(String(result), /^done-by-/);
  await waitFor(() => seen.includes(`completed ${job.id}`), { what: 'completed event' });
  assert.ok(seen.includes(`active ${job.id}`));
});
