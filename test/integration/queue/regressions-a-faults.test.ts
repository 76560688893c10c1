/**
 * Regressions around one faulty request: a connection cut just before a
 * promotion's write, a claim or an enqueue applied whose reply was lost, and
 * a leader's read of a lease answered late. The fault proxy picks the request
 * by what it writes or reads (the job's id in a path of the documented
 * layout), so each test states which request it hits, and checks the fault
 * did fire: a test whose fault never fired proves nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { Worker, type WorkerOptions } from '@zkq/worker';
import { cleanups, type Defer } from '../../helpers/cleanups.js';
import { FaultProxy, READ_OPS, request, WRITE_OPS } from '../../helpers/fault-proxy.js';
import { type QueueTestEnv, queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

async function proxied(defer: Defer, env: QueueTestEnv) {
  const proxy = await FaultProxy.start(env.connection.connectionString);
  defer(() => proxy.stop());
  const via = { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } };
  return { proxy, via };
}

/** A worker that counts processor starts per job id; errors are expected while faults are injected. */
function countingWorker(
  defer: Defer,
  queue: string,
  opts: WorkerOptions,
  processor: (
    job: { id: string; name: string; attemptsMade: number },
    signal?: AbortSignal,
  ) => Promise<unknown> = async () => 'ok',
) {
  const runs = new Map<string, number>();
  const lost: string[] = [];
  const stalled: string[] = [];
  const worker = new Worker(
    queue,
    async (job, _token, signal) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      return processor(job, signal);
    },
    opts,
  );
  worker.on('error', () => undefined);
  worker.on('lost', (job) => lost.push(job.id));
  worker.on('stalled', (id) => stalled.push(id));
  defer(() => worker.close());
  return { worker, runs, lost, stalled };
}

/** `promise`, or a rejection naming `what` after `ms`. */
function within<T>(promise: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function finishedState(queue: Queue, id: string, timeoutMs = 20_000): Promise<string> {
  return waitFor(
    async () => {
      const state = await queue.getJobState(id);
      return state === 'completed' || state === 'failed' ? state : undefined;
    },
    { timeoutMs, what: `job ${id} finished` },
  );
}

// ---- a failed write during promotion ---------------------------------------

test('a connection cut during a promotion does not end promotion: delayed jobs and backoff retries still run', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('promote-cut', env);
  defer(() => queue.close());
  const w = countingWorker(defer, 'promote-cut', { ...via, stalledInterval: 500 }, async (job) => {
    if (job.name === 'retry' && job.attemptsMade === 0) throw new Error('first attempt fails');
    return 'ok';
  });
  await waitFor(() => w.worker.isLeader, { what: 'the worker leads' });
  // The promotion's write (it moves the job out of delayed/) never reaches the
  // server: the connection drops for 300 ms; the session and the leadership survive.
  const cut = proxy.cutBefore(request(WRITE_OPS, '/delayed/', '-cut-during-promotion'), 300);
  await queue.add('first', {}, { delay: 500, jobId: 'cut-during-promotion' });
  await within(cut.done, "the promotion's write seen and cut");
  const later = await queue.add('later', {}, { delay: 500 });
  const retried = await queue.add('retry', {}, { attempts: 2, backoff: 500 });
  for (const id of ['cut-during-promotion', later.id, retried.id]) {
    assert.equal(await finishedState(queue, id), 'completed', `job ${id} completed`);
  }
  assert.equal(w.runs.get('cut-during-promotion'), 1);
  assert.equal(w.runs.get(later.id), 1);
  assert.equal(w.runs.get(retried.id), 2);
});

// ---- a stale read of a lease --------------------------------------------------

test('the leader does not revoke a renewing worker from a read of its lease that arrived late', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('stale-lease-read', env);
  defer(() => queue.close());
  const job = await queue.add('healthy', {}, { jobId: 'renewing' });
  // The leader's first read of this claim is answered 2.5 s late (longer than the
  // lease, while the worker renews it every second): a pause between read and decision.
  const slow = proxy.delayReply(request(READ_OPS, `/claims/${job.id}`), 2500);
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const owner = countingWorker(
    defer,
    'stale-lease-read',
    { ...env, housekeeping: false, lockDuration: 2000, maxStalledCount: 0 },
    async (_job, signal) => {
      started();
      // Runs until the late reply has been let through, then two more leases:
      // time for whatever the late read led to. An abort ends it early.
      const until = (ms: number) => sleep(ms, undefined, { signal }).catch(() => undefined);
      await Promise.race([slow.done, until(20_000)]);
      await until(4000);
      return 'by-owner';
    },
  );
  await within(running, 'the job started');
  const leader = countingWorker(
    defer,
    'stale-lease-read',
    { ...via, stalledInterval: 300, lockDuration: 2000, maxStalledCount: 0 },
    async () => 'by-leader',
  );
  const state = await finishedState(queue, job.id, 40_000);
  assert.ok(slow.hasFired, "the leader's read of the claim was answered late");
  assert.equal(state, 'completed', `the job ${state}: ${(await queue.getJob(job.id))?.failedReason ?? ''}`);
  assert.deepEqual(leader.stalled, [], 'the leader revoked nothing');
  assert.deepEqual(owner.lost, [], 'the owner lost nothing');
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.returnvalue, 'by-owner');
  assert.equal(stored?.stalledCounter, 0);
  assert.equal(owner.runs.get(job.id), 1);
  assert.equal(leader.runs.get(job.id), undefined);
});

// ---- a claim whose reply was lost ---------------------------------------------

test('a claim whose reply was lost: the job runs once, with no stall counted (maxStalledCount 0)', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('claim-reply-lost', env);
  defer(() => queue.close());
  const claimed = proxy.loseReply(request(WRITE_OPS, '/claims/orphan'));
  const w = countingWorker(defer, 'claim-reply-lost', {
    ...via,
    lockDuration: 2000,
    stalledInterval: 300,
    maxStalledCount: 0,
  });
  await queue.add('x', {}, { jobId: 'orphan' });
  await within(claimed.fired, "the claim's reply lost");
  const state = await finishedState(queue, 'orphan');
  const stored = await queue.getJob('orphan');
  assert.equal(state, 'completed', `the job ${state}: ${stored?.failedReason ?? ''}`);
  assert.equal(w.runs.get('orphan'), 1);
  assert.equal(stored?.stalledCounter, 0);
});

test('a claim whose reply was lost, with no leader to revoke it: the job still runs', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('claim-reply-lost-no-leader', env);
  defer(() => queue.close());
  const claimed = proxy.loseReply(request(WRITE_OPS, '/claims/no-leader'));
  const w = countingWorker(defer, 'claim-reply-lost-no-leader', { ...via, housekeeping: false, lockDuration: 2000 });
  await queue.add('x', {}, { jobId: 'no-leader' });
  await within(claimed.fired, "the claim's reply lost");
  assert.equal(await finishedState(queue, 'no-leader'), 'completed');
  assert.equal(w.runs.get('no-leader'), 1);
});

// ---- a lost enqueue reply, the jobs already run and removed ---------------------

test('an enqueue whose reply was lost is not sent again after its jobs ran and were removed', async (t) => {
  const env = await queueEnv(t, 15_000);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const completed = new Set<string>();
  let allDone!: () => void;
  const ranAndRemoved = new Promise<void>((r) => {
    allDone = r;
  });
  const w = countingWorker(defer, 'enqueue-reply-lost', { ...env, concurrency: 3 });
  w.worker.on('completed', (job) => {
    completed.add(job.id);
    if (completed.size === 3) allDone();
  });
  // The enqueue commits, its reply is lost, and the producer stays cut off
  // until the worker has run the three jobs and removed them (removeOnComplete).
  const lost = proxy.loseReply(request(WRITE_OPS, 'order-42'), ranAndRemoved);
  const producer = new Queue('enqueue-reply-lost', via);
  defer(() => producer.close());
  const opts = { removeOnComplete: true };
  const added = await producer.addBulk([
    { name: 'a', data: 1, opts },
    { name: 'b', data: 2, opts },
    { name: 'order', data: 3, opts: { ...opts, jobId: 'order-42' } },
  ]);
  assert.ok(lost.hasFired, "the enqueue's reply was lost");
  assert.ok(added.some((j) => j.id === 'order-42'));
  // Whatever the producer enqueued is enqueued by now: let the worker run it all.
  await waitFor(
    async () => {
      const c = await producer.getJobCounts('waiting', 'active', 'prioritized', 'delayed');
      return Object.values(c).every((n) => n === 0);
    },
    { what: 'the queue empty' },
  );
  for (const j of added) assert.equal(w.runs.get(j.id), 1, `job ${j.id} ran once`);
});
