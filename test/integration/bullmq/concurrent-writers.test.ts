/**
 * BullMQ's classes on the ZooKeeper backend, several clients writing the
 * same nodes at once: log lines added to one job by its Worker and by other
 * Queues (each line once), and the queue's settings changed field by field
 * (no change lost to another client's).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('log lines added to one job by its Worker and by three other Queues at once: each lands once', async (t) => {
  const { connection } = await bullEnv(t);
  const name = 'bull-log-writers';
  const queues = Array.from({ length: 4 }, () => new Queue(name, { connection }));
  t.after(() => Promise.all(queues.map((q) => q.close())));
  const [queue, ...others] = queues as [InstanceType<typeof Queue>, ...InstanceType<typeof Queue>[]];
  const lines = 15;
  let release!: () => void;
  const othersDone = new Promise<void>((r) => {
    release = r;
  });
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const worker = new Worker(
    name,
    async (job) => {
      started();
      for (let n = 0; n < lines; n++) await job.log(`worker:${n}`);
      await othersDone;
    },
    { connection },
  );
  t.after(() => worker.close());
  const job = await queue.add('logged', {});
  const id = job.id as string;
  await running;
  await Promise.all(
    others.map(async (q, w) => {
      for (let n = 0; n < lines; n++) await q.addJobLog(id, `queue${w}:${n}`);
    }),
  );
  release();
  await waitFor(async () => (await queue.getJobState(id)) === 'completed', { what: 'the job completed' });
  const { logs, count } = await queue.getJobLogs(id, 0, -1);
  const expected = ['worker', ...others.map((_, w) => `queue${w}`)].flatMap((writer) =>
    Array.from({ length: lines }, (_, n) => `${writer}:${n}`),
  );
  assert.equal(count, expected.length);
  assert.deepEqual([...logs].sort(), [...expected].sort(), 'each line once');
});

test('settings changed by several Queues at once, field by field: none lost', async (t) => {
  const { connection } = await bullEnv(t);
  const name = 'bull-settings-writers';
  const [a, b, c] = [0, 1, 2].map(() => new Queue(name, { connection })) as InstanceType<typeof Queue>[];
  t.after(() => Promise.all([a, b, c].map((q) => q?.close())));
  await a?.waitUntilReady();
  const rounds = 15;
  await Promise.all([
    (async () => {
      for (let n = 1; n <= rounds; n++) await a?.setGlobalConcurrency(n);
    })(),
    (async () => {
      for (let n = 1; n <= rounds; n++) await b?.setGlobalRateLimit(n, 1000 + n);
    })(),
    (async () => {
      for (let n = 1; n <= rounds; n++) {
        await c?.setGlobalConcurrency(100 + n);
        await c?.removeGlobalConcurrency();
      }
    })(),
  ]);
  // the last changes: the rate limit's, and a concurrency of `a` or none (c removed it last)
  assert.deepEqual(await a?.getGlobalRateLimit(), { max: rounds, duration: 1000 + rounds });
  const concurrency = await a?.getGlobalConcurrency();
  assert.ok(concurrency === null || concurrency === rounds, `the concurrency left: ${concurrency}`);
});
