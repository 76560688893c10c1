import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { JobNotFoundError, JobStateError, QueueNotEmptyError } from '@zkq/core';
import { claimJobs, QueueStore, scanHead } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

/** A promise with its resolve function, to hold a processor mid-job. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

/** Claims job `id` by hand on the queue's own session: it is active until that session ends. */
async function claimByHand(queue: Queue, id: string): Promise<void> {
  const store = new QueueStore(await queue.client, queue.name);
  const head = await scanHead(store, { limit: 10_000, exclude: new Set() });
  const candidate = head.find((c) => c.id === id);
  assert.ok(candidate, `job ${id} is at the head`);
  const { claimed } = await claimJobs(store, [candidate], { workerId: 'test', lockDuration: 600_000 });
  assert.equal(claimed.length, 1);
}

async function counts(queue: Queue) {
  return queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed');
}

const NONE = { waiting: 0, prioritized: 0, delayed: 0, active: 0, completed: 0, failed: 0 };

test('remove deletes a job in any state except active', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('rm', env);
  t.after(() => queue.close());
  const removedEvents: string[] = [];
  queue.on('removed', (id) => removedEvents.push(id));

  const good = await queue.add('good', {});
  const bad = await queue.add('bad', {});
  const worker = new Worker(
    'rm',
    async (job) => {
      if (job.name === 'bad') throw new Error('boom');
      return 'ok';
    },
    env,
  );
  await waitFor(async () => {
    const c = await counts(queue);
    return c.completed === 1 && c.failed === 1;
  });
  await worker.close();

  const waiting = await queue.add('w', {});
  const prioritized = await queue.add('p', {}, { priority: 5 });
  const delayed = await queue.add('d', {}, { delay: 60_000 });
  const held = await queue.add('held', {});
  await claimByHand(queue, held.id);
  assert.deepEqual(await counts(queue), {
    ...NONE,
    waiting: 1,
    prioritized: 1,
    delayed: 1,
    active: 1,
    completed: 1,
    failed: 1,
  });

  assert.equal(await queue.remove(waiting.id), 1);
  assert.equal(await queue.getJob(waiting.id), undefined);
  await prioritized.remove();
  assert.equal(await queue.remove(delayed.id), 1);
  assert.equal(await queue.remove(good.id), 1);
  await bad.remove();
  assert.deepEqual(await counts(queue), { ...NONE, active: 1 });

  // Active: refused, and left as it was.
  assert.equal(await queue.remove(held.id), 0);
  await assert.rejects(held.remove(), (err: unknown) => err instanceof JobStateError && err.code === 'ZKQ_JOB_STATE');
  assert.equal(await held.getState(), 'active');
  assert.deepEqual(await counts(queue), { ...NONE, active: 1 });

  // Gone already: nothing to do (BullMQ's 1).
  assert.equal(await queue.remove(waiting.id), 1);
  assert.deepEqual(removedEvents, [waiting.id, delayed.id, good.id]);
});

test('job.retry runs a failed job again to completion, with fresh counters', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('retry', env);
  t.after(() => queue.close());
  const calls = new Map<string, number>();
  const worker = new Worker(
    'retry',
    async (job) => {
      const n = (calls.get(job.id) ?? 0) + 1;
      calls.set(job.id, n);
      if (n === 1) throw new Error('first attempt fails');
      return `attempt ${n}`;
    },
    env,
  );
  t.after(() => worker.close());
  const job = await queue.add('x', { v: 1 }, { attempts: 1 });
  await waitFor(async () => (await counts(queue)).failed === 1, { what: 'failed' });
  const failed = await queue.getJob(job.id);
  assert.ok(failed);
  assert.equal(failed.failedReason, 'first attempt fails');
  assert.equal(failed.attemptsMade, 1);
  await assert.rejects(failed.retry('completed'), JobStateError);

  await failed.retry();
  assert.equal(failed.failedReason, undefined);
  await waitFor(async () => (await counts(queue)).completed === 1, { what: 'completed after retry' });
  const done = await queue.getJob(job.id);
  assert.ok(done);
  assert.equal(done.returnvalue, 'attempt 2');
  assert.equal(done.attemptsMade, 1);
  assert.equal(done.failedReason, undefined);
  assert.deepEqual(await counts(queue), { ...NONE, completed: 1 });

  // A completed job can be retried too (state 'completed'); a waiting one cannot.
  await done.retry('completed');
  await waitFor(async () => (await queue.getJob(job.id))?.returnvalue === 'attempt 3', { what: 'third run' });
  const waiting = await queue.add('y', {}, { delay: 60_000 });
  await assert.rejects(waiting.retry(), JobStateError);
  await waiting.remove();
  await assert.rejects(waiting.retry(), JobNotFoundError);
});

test('promote makes a delayed job run now', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('promote', env);
  t.after(() => queue.close());
  const worker = new Worker('promote', async (job) => job.data.n, env);
  t.after(() => worker.close());
  const job = await queue.add('later', { n: 7 }, { delay: 600_000 });
  assert.equal(await job.getState(), 'delayed');
  const before = Date.now();
  await job.promote();
  await waitFor(async () => (await queue.getJob(job.id))?.finishedOn, { what: 'promoted job finished' });
  assert.ok(Date.now() - before < 15_000);
  const done = await queue.getJob(job.id);
  assert.ok(done);
  assert.equal(done.returnvalue, 7);
  assert.equal(done.delay, 0);
  assert.deepEqual(await counts(queue), { ...NONE, completed: 1 });
  await assert.rejects(
    done.promote(),
    (err: unknown) => err instanceof JobStateError && /not delayed/.test(String(err)),
  );
});

test('promoteJobs and retryJobs move jobs in bulk', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('bulk', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 7 }, (_, i) => ({ name: 'd', data: i, opts: { delay: 600_000 } })));
  assert.equal((await counts(queue)).delayed, 7);
  await queue.promoteJobs({ count: 3 });
  assert.deepEqual(await counts(queue), { ...NONE, waiting: 7 });

  const failing = new Worker(
    'bulk',
    async () => {
      throw new Error('no');
    },
    env,
  );
  await waitFor(async () => (await counts(queue)).failed === 7, { what: '7 failed' });
  await failing.close();
  await queue.retryJobs({ timestamp: Date.now() - 600_000 }); // all finished later: none moves
  assert.deepEqual(await counts(queue), { ...NONE, failed: 7 });
  await queue.retryJobs({ count: 2 });
  assert.deepEqual(await counts(queue), { ...NONE, waiting: 7 });
  const job = (await queue.getWaiting())[0];
  assert.equal(job?.attemptsMade, 0);
  assert.equal(job?.failedReason, undefined);

  const ok = new Worker('bulk', async (j) => j.data, env);
  await waitFor(async () => (await counts(queue)).completed === 7, { what: '7 completed' });
  await ok.close();
  await queue.retryJobs({ state: 'completed' });
  assert.deepEqual(await counts(queue), { ...NONE, waiting: 7 });
});

test('drain removes waiting and prioritized jobs, delayed ones only when asked, never the active one', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('drain', env);
  t.after(() => queue.close());
  const started = gate();
  const release = gate();
  const worker = new Worker(
    'drain',
    async (job) => {
      if (job.name === 'hold') {
        started.open();
        await release.promise;
      }
      return job.name;
    },
    { ...env, concurrency: 1 },
  );
  t.after(() => worker.close());
  const held = await queue.add('hold', {});
  await started.promise;
  await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'w', data: i })));
  await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'p', data: i, opts: { priority: 1 + i } })));
  await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'd', data: i, opts: { delay: 600_000 } })));
  await queue.add('lifo', {}, { lifo: true });
  assert.deepEqual(await counts(queue), { ...NONE, waiting: 11, prioritized: 3, delayed: 4, active: 1 });

  await queue.drain();
  assert.deepEqual(await counts(queue), { ...NONE, delayed: 4, active: 1 });
  await queue.drain(true);
  assert.deepEqual(await counts(queue), { ...NONE, active: 1 });
  assert.equal(await held.getState(), 'active');

  release.open();
  await waitFor(async () => (await counts(queue)).completed === 1, { what: 'held job completed' });
  assert.deepEqual(await counts(queue), { ...NONE, completed: 1 });
  assert.equal((await queue.getJob(held.id))?.returnvalue, 'hold');
});

test('clean respects grace, limit and type, and never removes an active job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('clean', env);
  t.after(() => queue.close());
  const cleaned: [string[], string][] = [];
  queue.on('cleaned', (ids, type) => cleaned.push([ids, type]));
  const worker = new Worker(
    'clean',
    async (job) => {
      if (job.name === 'bad') throw new Error('bad');
      return job.data;
    },
    env,
  );
  const old = await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'old', data: i })));
  await waitFor(async () => (await counts(queue)).completed === 6, { what: 'old completed' });
  await sleep(300);
  const mid = Date.now(); // the old jobs finished before it, the new ones after
  const grace = () => Date.now() - mid;
  await sleep(300);
  await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'new', data: i })));
  await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'bad', data: i })));
  await waitFor(
    async () => {
      const c = await counts(queue);
      return c.completed === 10 && c.failed === 3;
    },
    { what: 'new completed, bad failed' },
  );
  await worker.close();

  assert.deepEqual(await queue.clean(60_000, 0), []);
  const first = await queue.clean(grace(), 2); // oldest first, up to the limit
  assert.deepEqual(
    first,
    old.slice(0, 2).map((j) => j.id),
  );
  const rest = await queue.clean(grace(), 0, 'completed');
  assert.deepEqual(
    rest.sort(),
    old
      .slice(2)
      .map((j) => j.id)
      .sort(),
  );
  assert.equal((await counts(queue)).completed, 4);
  assert.equal((await queue.clean(0, 0, 'failed')).length, 3);
  assert.deepEqual(await counts(queue), { ...NONE, completed: 4 });

  // Waiting jobs, by creation time; the active one stays.
  const waiting = await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'w', data: i })));
  await claimByHand(queue, waiting[0]!.id);
  const delayed = await queue.add('d', {}, { delay: 600_000, priority: 2 });
  assert.deepEqual(await queue.clean(60_000, 0, 'wait'), []);
  assert.deepEqual(await queue.clean(0, 0, 'active'), []);
  const wait = await queue.clean(0, 0, 'waiting');
  assert.deepEqual(
    wait.sort(),
    waiting
      .slice(1)
      .map((j) => j.id)
      .sort(),
  );
  assert.deepEqual(await counts(queue), { ...NONE, active: 1, delayed: 1, completed: 4 });
  assert.deepEqual(await queue.clean(0, 0, 'prioritized'), []); // delayed jobs are not prioritized ones
  assert.deepEqual(await queue.clean(0, 0, 'delayed'), [delayed.id]);
  assert.deepEqual(await counts(queue), { ...NONE, active: 1, completed: 4 });
  assert.equal(await waiting[0]!.getState(), 'active');
  assert.deepEqual(
    cleaned.map(([ids, type]) => [ids.length, type]),
    [
      [0, 'completed'],
      [2, 'completed'],
      [4, 'completed'],
      [3, 'failed'],
      [0, 'wait'],
      [0, 'active'],
      [4, 'wait'],
      [0, 'prioritized'],
      [1, 'delayed'],
    ],
  );
  await assert.rejects(queue.clean(-1, 0), /grace/);
});

test('obliterate refuses while a job is active, then deletes every node of the queue', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('oblit', env);
  t.after(() => queue.close());
  const started = gate();
  const release = gate();
  const worker = new Worker(
    'oblit',
    async (job) => {
      if (job.name === 'hold') {
        started.open();
        await release.promise;
      }
      return 1;
    },
    { ...env, concurrency: 1 },
  );
  await queue.addBulk([
    { name: 'a', data: 1 },
    { name: 'b', data: 2 },
  ]);
  await waitFor(async () => (await counts(queue)).completed === 2, { what: '2 completed' });
  await queue.add('hold', {});
  await started.promise;
  await queue.addBulk([
    { name: 'w', data: 1 },
    { name: 'd', data: 2, opts: { delay: 600_000 } },
  ]);
  const before = await counts(queue);
  await assert.rejects(
    queue.obliterate(),
    (err: unknown) => err instanceof QueueNotEmptyError && err.code === 'ZKQ_QUEUE_NOT_EMPTY' && err.active === 1,
  );
  assert.equal(await queue.isPaused(), false);
  assert.deepEqual(await counts(queue), before);

  release.open();
  await waitFor(async () => (await counts(queue)).completed === 4, { what: 'held and waiting jobs completed' });
  await worker.close();
  await queue.obliterate();
  const session = await queue.client;
  assert.equal(await session.exists('/oblit'), null);
  await sleep(500);
  assert.equal(await session.exists('/oblit'), null, 'nothing wrote the queue again');
  await queue.obliterate(); // nothing left: a no-op

  // The name can be used again, by a new Queue.
  const again = new Queue('oblit', env);
  t.after(() => again.close());
  await again.add('fresh', {});
  assert.deepEqual(await counts(again), { ...NONE, waiting: 1 });
});

test('obliterate with force deletes a queue with active jobs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('force', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'x', data: i })));
  await queue.add('d', {}, { delay: 600_000 });
  await claimByHand(queue, jobs[0]!.id);
  await assert.rejects(queue.obliterate({ force: false }), QueueNotEmptyError);
  await queue.obliterate({ force: true });
  const session = await queue.client;
  assert.equal(await session.exists('/force'), null);
  await sleep(500);
  assert.equal(await session.exists('/force'), null);

  // What a live worker leaves behind (its election node) goes too.
  await session.ensurePath('/force/leader/n-0000000000');
  await queue.obliterate();
  assert.equal(await session.exists('/force'), null);
});

test('queue control writes removed, waiting and cleaned events', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('ctl-events', env);
  t.after(() => queue.close());
  const events = new QueueEvents('ctl-events', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen: string[] = [];
  events.on('removed', ({ jobId, prev }) => seen.push(`removed ${jobId} ${prev}`));
  events.on('waiting', ({ jobId, prev }) => {
    if (prev) seen.push(`waiting ${jobId} ${prev}`);
  });
  events.on('cleaned', ({ count }) => seen.push(`cleaned ${count}`));
  await sleep(500); // writers learn of the listener through a watch

  const a = await queue.add('a', {}, { priority: 3 });
  const b = await queue.add('b', {}, { delay: 600_000 });
  const c = await queue.add('c', {});
  await queue.remove(a.id);
  await b.promote();
  await queue.drain();
  await queue.add('d', {}, { delay: 600_000 });
  await queue.clean(0, 0, 'delayed');
  const expected = [`removed ${a.id} prioritized`, `waiting ${b.id} delayed`, `removed ${c.id} waiting`];
  await waitFor(() => seen.length >= 5, { what: 'five events' });
  assert.deepEqual(seen.slice(0, 3), expected);
  assert.ok(seen.slice(3).includes(`removed ${b.id} waiting`));
  assert.ok(seen.includes('cleaned 1'));
});
