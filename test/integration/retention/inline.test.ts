/**
 * Retention kept inside the finish: with a count bound N, the finished set
 * holds at most N jobs whenever a `completed` / `failed` event is emitted,
 * with several workers whose batches finish together, after another process
 * trimmed or removed jobs (a stale view), and for failures too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openSession, QueueStore, trimFinished } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

type Kind = 'completed' | 'failed';

/**
 * Reads the count of `kind` at every event and in a loop meanwhile; every
 * read must be within `bound` (each transaction keeps it, so any read does).
 */
function boundWatch(queue: Queue, kind: Kind, bound: number) {
  const seen: number[] = [];
  const reads: Promise<void>[] = [];
  const read = () => {
    const p = queue.getJobCounts(kind).then((c) => {
      seen.push(c[kind] ?? 0);
    });
    reads.push(p);
    return p;
  };
  let polling = true;
  const poller = (async () => {
    while (polling) await read();
  })();
  return {
    onEvent: () => void read(),
    async done(): Promise<number[]> {
      polling = false;
      await poller;
      await Promise.all(reads);
      const over = seen.filter((n) => n > bound);
      assert.deepEqual(over, [], `every read of ${kind} within ${bound} (${seen.length} reads)`);
      return seen;
    },
  };
}

test('count bound, one job at a time: exactly the newest N kept at every event', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('exact', env);
  t.after(() => queue.close());
  const N = 3;
  const jobs = await queue.addBulk(
    Array.from({ length: 12 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: N } })),
  );
  const watch = boundWatch(queue, 'completed', N);
  const order: string[] = [];
  const worker = new Worker('exact', async (job) => job.data.i, { ...env, concurrency: 1 });
  t.after(() => worker.close());
  worker.on('completed', (job) => {
    order.push(job.id);
    watch.onEvent();
  });
  await waitFor(() => order.length === jobs.length, { what: 'all completed' });
  await watch.done();
  const left = (await queue.getJobs(['completed'], 0, -1, true)).map((j) => j.id);
  assert.deepEqual(left, order.slice(-N));
});

test('count bound: one worker, batches finishing together: at most N at every event', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('keep', env);
  t.after(() => queue.close());
  const N = 5;
  const jobs = await queue.addBulk(
    Array.from({ length: 60 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: N } })),
  );
  const watch = boundWatch(queue, 'completed', N);
  let completed = 0;
  const worker = new Worker('keep', async (job) => job.data.i, { ...env, concurrency: 8 });
  t.after(() => worker.close());
  worker.on('completed', () => {
    completed++;
    watch.onEvent();
  });
  await waitFor(() => completed === jobs.length, { what: 'all completed' });
  await watch.done();
  assert.equal((await queue.getJobCounts('completed')).completed, N);
});

test('count bound: several workers (sessions) finishing at once keep it at every event', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('many', env);
  t.after(() => queue.close());
  const N = 4;
  await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'j', data: { i } })));
  const watch = boundWatch(queue, 'completed', N);
  let completed = 0;
  const workers = ['a', 'b', 'c'].map(
    (name) => new Worker('many', async () => 'ok', { ...env, name, concurrency: 6, removeOnComplete: { count: N } }),
  );
  t.after(() => Promise.all(workers.map((w) => w.close())));
  for (const w of workers) {
    w.on('completed', () => {
      completed++;
      watch.onEvent();
    });
  }
  await waitFor(() => completed === 120, { what: '120 completed' });
  await watch.done();
  assert.equal((await queue.getJobCounts('completed')).completed, N);
});

test('count bound on failures: at most N failed at every failed event, several workers', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('fails', env);
  t.after(() => queue.close());
  const N = 3;
  await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnFail: N } })));
  const watch = boundWatch(queue, 'failed', N);
  let failed = 0;
  const workers = ['a', 'b'].map(
    (name) =>
      new Worker(
        'fails',
        async () => {
          throw new Error('no');
        },
        { ...env, name, concurrency: 4 },
      ),
  );
  t.after(() => Promise.all(workers.map((w) => w.close())));
  for (const w of workers) {
    w.on('failed', () => {
      failed++;
      watch.onEvent();
    });
  }
  await waitFor(() => failed === 40, { what: '40 failed' });
  await watch.done();
  assert.equal((await queue.getJobCounts('failed')).failed, N);
});

test('a stale view: jobs another process trimmed or removed meanwhile are never counted twice', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stale', env);
  t.after(() => queue.close());
  const N = 6;
  const opts = { removeOnComplete: N };
  let completed = 0;
  const worker = new Worker('stale', async (job) => job.data.i, { ...env, concurrency: 1 });
  t.after(() => worker.close());
  const watch = boundWatch(queue, 'completed', N);
  worker.on('completed', () => {
    completed++;
    watch.onEvent();
  });
  const add = (from: number, n: number) =>
    queue.addBulk(Array.from({ length: n }, (_, k) => ({ name: 'j', data: { i: from + k }, opts })));
  await add(0, 10);
  await waitFor(() => completed === 10, { what: 'first ten' });
  assert.equal((await queue.getJobCounts('completed')).completed, N);

  // another process trims down to 2: the worker's view of the oldest N is now wrong
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const other = new QueueStore(session, 'stale');
  await other.init();
  assert.equal((await trimFinished(other, 'completed', { count: 2 })).length, N - 2);
  await add(10, 10);
  await waitFor(() => completed === 20, { what: 'second ten' });
  // the set filled up again to N: nothing the worker planned from its old view was trimmed twice
  assert.equal((await queue.getJobCounts('completed')).completed, N);

  // jobs removed by hand: the oldest (next to be trimmed), and the newest
  const kept = (await queue.getJobs(['completed'], 0, -1, true)).map((j) => j.id);
  assert.equal(kept.length, N);
  await queue.remove(kept[0] as string);
  await queue.remove(kept[N - 1] as string);
  await add(20, 10);
  await waitFor(() => completed === 30, { what: 'third ten' });
  await watch.done();
  const left = (await queue.getJobs(['completed'], 0, -1, true)).map((j) => j.id);
  assert.ok(left.length <= N && left.length >= N - 1, `kept ${left.length}`);
  // whatever was trimmed, the last jobs completed are kept
  const newest = (await queue.getJobs(['completed'], 0, 0)).map((j) => j.id);
  assert.equal((await queue.getJob(newest[0] as string))?.data.i, 29);
});

test('count bound with replies lost mid-run: every job finishes once, the bound holds at every read', async (t) => {
  const env = await queueEnv(t);
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  const queue = new Queue('lossy', env);
  const N = 3;
  await queue.addBulk(
    Array.from({ length: 40 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: N } })),
  );
  const watch = boundWatch(queue, 'completed', N);
  const runs = new Map<number, number>();
  let completed = 0;
  const worker = new Worker(
    'lossy',
    async (job) => {
      runs.set(job.data.i, (runs.get(job.data.i) ?? 0) + 1);
      return job.data.i;
    },
    { ...env, connection: { ...env.connection, connectionString: proxy.connectionString }, concurrency: 4 },
  );
  t.after(async () => {
    proxy.restore();
    await worker.close();
    await queue.close();
    await proxy.stop();
  });
  worker.on('completed', () => {
    completed++;
    watch.onEvent();
  });
  await waitFor(() => completed >= 10, { what: 'ten completed' });
  proxy.dropReplies(); // finishes (and their trims) reach the server; their replies are lost
  await sleep(500);
  proxy.restore();
  await waitFor(async () => (await queue.getJobCountByTypes('waiting', 'active', 'delayed')) === 0, {
    timeoutMs: 40_000,
    what: 'every job finished',
  });
  await watch.done();
  assert.deepEqual(await queue.getJobCounts('completed', 'failed'), { completed: N, failed: 0 });
  assert.equal(runs.size, 40);
  assert.deepEqual(
    [...runs.values()].filter((n) => n !== 1),
    [],
  );
});
