/**
 * BullMQ's queue control on the ZooKeeper backend, through BullMQ's Queue
 * and Job: pause and resume, drain, clean, obliterate, promote, remove,
 * retry. What they did is read back through zkq's own Queue on the same
 * store, and QueueEvents sees the events they log.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, QueueEvents } = withBackend(createZooKeeperBackend);

async function bullEnv(t: { name?: string; after(fn: () => unknown): void }, name: string) {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const events = new QueueEvents(name, { connection });
  t.after(() => events.close());
  await events.waitUntilReady(); // before the queue: its writes are logged from the first one
  const queue = new Queue(name, { connection });
  const zkq = new ZkqQueue(name, env);
  t.after(() => Promise.all([queue.close(), zkq.close()]));
  return { env, connection, events, queue, zkq };
}

/** Records the `event` events a QueueEvents emits. */
function collect(qe: { on(event: string, fn: (...a: any[]) => void): unknown }, event: string): any[] {
  const seen: any[] = [];
  qe.on(event, (args: unknown) => seen.push(args));
  return seen;
}

/** A promise and its resolver: a processor that waits for the test. */
function gate(): { open: () => void; wait: Promise<void> } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, wait };
}

test('pause stops claims until resume; both are logged as events', async (t) => {
  const { connection, events, queue, zkq } = await bullEnv(t, 'pz');
  const paused = collect(events, 'paused');
  const resumed = collect(events, 'resumed');
  await queue.pause();
  assert.equal(await zkq.isPaused(), true);
  const job = await queue.add('held', { v: 1 });
  const ran: string[] = [];
  const worker = new Worker('pz', async (j) => void ran.push(j.id as string), { connection });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  assert.equal(await job.getState(), 'waiting');
  await queue.resume();
  assert.equal(await zkq.isPaused(), false);
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job to run after resume' });
  assert.deepEqual(ran, [job.id]);
  await waitFor(() => paused.length === 1 && resumed.length === 1, { what: 'paused and resumed events' });
});

test('drain removes waiting and prioritized jobs, delayed ones only when asked; removed events', async (t) => {
  const { events, queue, zkq } = await bullEnv(t, 'dr');
  const removed = collect(events, 'removed');
  await queue.add('plain', {});
  await queue.add('urgent', {}, { priority: 3 });
  const later = await queue.add('later', {}, { delay: 60_000 });
  await queue.drain();
  assert.deepEqual(await zkq.getJobCounts('waiting', 'prioritized', 'delayed'), {
    waiting: 0,
    prioritized: 0,
    delayed: 1,
  });
  await queue.drain(true);
  assert.equal(await later.getState(), 'unknown');
  assert.equal(await zkq.getJobCountByTypes('waiting', 'prioritized', 'delayed'), 0);
  await waitFor(() => removed.length === 3, { what: 'three removed events' });
  assert.deepEqual(removed.map((r) => r.prev).sort(), ['delayed', 'prioritized', 'waiting']);
});

test('clean removes jobs of a state past the grace period, up to the limit; cleaned events', async (t) => {
  const { connection, events, queue, zkq } = await bullEnv(t, 'cl');
  const cleaned = collect(events, 'cleaned');
  const jobs = await queue.addBulk([1, 2, 3].map((n) => ({ name: 'done', data: { n } })));
  const worker = new Worker('cl', async () => 'ok', { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await zkq.getJobCountByTypes('completed')) === 3, { what: 'three completed jobs' });
  await worker.close();

  assert.deepEqual(await queue.clean(60_000, 0, 'completed'), [], 'all finished within the grace period');
  const firstTwo = await queue.clean(0, 2, 'completed');
  assert.equal(firstTwo.length, 2);
  const rest = await queue.clean(0, 0, 'completed');
  assert.deepEqual([...firstTwo, ...rest].sort(), jobs.map((j) => j.id as string).sort());

  const waiting = await queue.add('w', {});
  const urgent = await queue.add('p', {}, { priority: 1 });
  const later = await queue.add('d', {}, { delay: 60_000 });
  assert.deepEqual(await queue.clean(0, 0, 'wait'), [waiting.id]);
  assert.deepEqual(await queue.clean(0, 0, 'prioritized'), [urgent.id]);
  assert.deepEqual(await queue.clean(0, 0, 'delayed'), [later.id]);
  assert.deepEqual(await queue.clean(0, 0, 'active'), []);
  await waitFor(() => cleaned.length >= 5, { what: 'cleaned events' });
  assert.deepEqual(
    cleaned.map((c) => c.count),
    ['2', '1', '1', '1', '1'],
  );
});

test('obliterate refuses while a job runs, forced it deletes the queue; a QueueEvents does not hold it up', async (t) => {
  const { connection, queue, zkq } = await bullEnv(t, 'ob');
  const release = gate();
  const started = gate();
  const worker = new Worker(
    'ob',
    async () => {
      started.open();
      await release.wait;
    },
    { connection },
  );
  t.after(() => worker.close());
  t.after(release.open);
  const running = await queue.add('running', {});
  await queue.add('waiting', {});
  await started.wait;
  await assert.rejects(queue.obliterate(), { message: 'Cannot obliterate queue with active jobs' });
  assert.equal(await running.getState(), 'active');
  assert.equal(await zkq.isPaused(), true, 'the queue stays paused, as BullMQ leaves it');

  await worker.close(true);
  await queue.obliterate({ force: true });
  const session = await zkq.waitUntilReady();
  assert.equal(await session.exists('/ob'), null, 'nothing of the queue is left');
});

test('promote and promoteJobs move delayed jobs to waiting; promoting another job is an error', async (t) => {
  const { events, queue, zkq } = await bullEnv(t, 'pr');
  const waiting = collect(events, 'waiting');
  const one = await queue.add('one', {}, { delay: 60_000 });
  const two = await queue.add('two', {}, { delay: 60_000, priority: 2 });
  const three = await queue.add('three', {}, { delay: 120_000 });
  await one.promote();
  assert.equal(one.delay, 0);
  assert.equal(await one.getState(), 'waiting');
  assert.equal((await queue.getJob(one.id as string))?.delay, 0);
  await assert.rejects(one.promote(), { code: -3, message: `Job ${one.id} is not in the delayed state. promote` });
  await queue.promoteJobs();
  assert.equal(await two.getState(), 'prioritized');
  assert.equal(await three.getState(), 'waiting');
  assert.equal(await zkq.getJobCountByTypes('delayed'), 0);
  await waitFor(() => waiting.filter((w) => w.prev === 'delayed').length === 3, { what: 'waiting events' });
});

test('remove deletes a job that is not running: 1, or 0 while it runs', async (t) => {
  const { connection, queue } = await bullEnv(t, 'rm');
  const plain = await queue.add('plain', {});
  assert.equal(await queue.remove(plain.id as string), 1);
  assert.equal(await queue.getJob(plain.id as string), undefined);
  assert.equal(await queue.remove('no-such-job'), 1, "BullMQ's answer for a missing job");

  const release = gate();
  const started = gate();
  const worker = new Worker(
    'rm',
    async () => {
      started.open();
      await release.wait;
    },
    { connection },
  );
  t.after(() => worker.close());
  t.after(release.open);
  const busy = await queue.add('busy', {});
  await started.wait;
  assert.equal(await queue.remove(busy.id as string), 0);
  await assert.rejects(busy.remove(), {
    message: `Job ${busy.id} could not be removed because it is locked by another worker`,
  });
  release.open();
  await waitFor(async () => (await busy.getState()) === 'completed', { what: 'the job to complete' });
  await busy.remove();
  assert.equal(await busy.getState(), 'unknown');
});

test('retry: Job.retry keeps attempt counters unless told, Queue.retryJobs retries a whole state', async (t) => {
  const { connection, events, queue, zkq } = await bullEnv(t, 'rt');
  const waiting = collect(events, 'waiting');
  const failing = new Set(['a', 'b', 'c']);
  const worker = new Worker(
    'rt',
    async (job) => {
      if (failing.has(job.data.k)) throw new Error(`no ${job.data.k}`);
      return `ok ${job.data.k}`;
    },
    { connection },
  );
  t.after(() => worker.close());
  const [a, b, c] = await queue.addBulk(['a', 'b', 'c'].map((k) => ({ name: k, data: { k }, opts: { attempts: 1 } })));
  await waitFor(async () => (await zkq.getJobCountByTypes('failed')) === 3, { what: 'three failed jobs' });
  const done = await queue.add('done', { k: 'd' });
  await waitFor(async () => (await done.getState()) === 'completed', { what: 'a completed job' });

  await assert.rejects(done.retry('failed'), {
    code: -3,
    message: `Job ${done.id} is not in the failed state. reprocessJob`,
  });
  failing.clear();
  const fa = await queue.getJob(a?.id as string);
  await fa?.retry('failed');
  await waitFor(async () => (await fa?.getState()) === 'completed', { what: 'a retried job to complete' });
  assert.equal((await queue.getJob(a?.id as string))?.attemptsMade, 2, 'attempts kept, as BullMQ keeps them');

  const fb = await queue.getJob(b?.id as string);
  failing.add('b');
  await fb?.retry('failed', { resetAttemptsMade: true });
  await waitFor(
    async () => (await fb?.getState()) === 'failed' && (await queue.getJob(b?.id as string))?.attemptsMade === 1,
    {
      what: 'a reset job to fail once more',
    },
  );
  failing.clear();

  await queue.retryJobs({ state: 'failed' });
  await queue.retryJobs({ state: 'completed' });
  for (const id of [b?.id, c?.id, done.id]) {
    await waitFor(async () => (await queue.getJob(id as string))?.returnvalue?.startsWith('ok'), { what: `job ${id}` });
  }
  assert.ok(waiting.some((w) => w.prev === 'completed') && waiting.some((w) => w.prev === 'failed'));
  // delayed: the worker still running here cannot claim it before it is removed
  const gone = await queue.add('gone', {}, { delay: 600_000 });
  await gone.remove();
  await assert.rejects(gone.retry('failed'), { code: -1, message: `Missing key for job ${gone.id}. reprocessJob` });
});

test('no flows and no orphans: the children operations and removeOrphanedJobs answer truthfully', async (t) => {
  const { queue } = await bullEnv(t, 'fl');
  const job = await queue.add('solo', {});
  assert.equal(await queue.removeOrphanedJobs(), 0);
  assert.equal(await job.removeChildDependency(), false);
  await job.removeUnprocessedChildren();
  assert.equal(await job.getState(), 'waiting');
});
