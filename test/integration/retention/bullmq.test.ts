/**
 * Retention on the ZooKeeper backend, as BullMQ's Worker drives it: a count
 * bound holds at every `completed` / `failed` event (the finish trims in its
 * own transaction), and a trimmed failed child that was still pending for
 * its parent leaves the parent's dependencies, so the parent goes on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

type Kind = 'completed' | 'failed';

/** Reads of the count of `kind`, one per event; all must be within `bound`. */
function countsAtEvents(queue: InstanceType<typeof Queue>, kind: Kind) {
  const reads: Promise<number>[] = [];
  return {
    onEvent: () => {
      reads.push(queue.getJobCounts(kind).then((c) => c[kind] ?? 0));
    },
    all: () => Promise.all(reads),
  };
}

test('removeOnComplete count: at most N at every completed event, exactly the newest N kept', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('keep', { connection });
  t.after(() => queue.close());
  const N = 3;
  const jobs = await queue.addBulk(
    Array.from({ length: 12 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: N } })),
  );
  const counts = countsAtEvents(queue, 'completed');
  const order: string[] = [];
  const worker = new Worker('keep', async (job: Job) => job.data.i, { connection });
  t.after(() => worker.close());
  worker.on('completed', (job: Job) => {
    order.push(job.id as string);
    counts.onEvent();
  });
  await waitFor(() => order.length === jobs.length, { what: 'all completed' });
  const seen = await counts.all();
  assert.deepEqual(
    seen.filter((n) => n > N),
    [],
  );
  const left = (await queue.getJobs(['completed'], 0, -1, true)).map((j) => j.id);
  assert.deepEqual(left, order.slice(-N));
});

test('removeOnFail count on the Worker, two workers at once: at most N at every failed event', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('fails', { connection });
  t.after(() => queue.close());
  const N = 2;
  await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'j', data: { i } })));
  const counts = countsAtEvents(queue, 'failed');
  let failed = 0;
  const workers = [1, 2].map(
    () =>
      new Worker(
        'fails',
        async () => {
          throw new Error('no');
        },
        { connection, concurrency: 4, removeOnFail: { count: N } },
      ),
  );
  t.after(() => Promise.all(workers.map((w) => w.close())));
  for (const w of workers) {
    w.on('failed', () => {
      failed++;
      counts.onEvent();
    });
  }
  await waitFor(() => failed === 30, { what: '30 failed' });
  const seen = await counts.all();
  assert.deepEqual(
    seen.filter((n) => n > N),
    [],
  );
  assert.equal((await queue.getJobCounts('failed')).failed, N);
});

test('a failed child trimmed while its parent waits for it leaves the parent, which then goes on', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const kids = new Queue('kids', { connection });
  const parents = new Queue('parents', { connection });
  t.after(() => Promise.all([flow.close(), kids.close(), parents.close()]));
  // plain failures (no failParentOnFailure...): each stays pending for its parent
  const keepOne = { removeOnFail: 1 };
  const tree = await flow.add({
    name: 'parent',
    queueName: 'parents',
    children: [
      { name: 'c1', queueName: 'kids', opts: keepOne },
      { name: 'c2', queueName: 'kids', opts: keepOne },
    ],
  });
  const failedKids: string[] = [];
  const kidWorker = new Worker(
    'kids',
    async () => {
      throw new Error('kid broke');
    },
    { connection },
  );
  t.after(() => kidWorker.close());
  kidWorker.on('failed', (job) => failedKids.push(job?.name ?? ''));
  await waitFor(() => failedKids.length === 2, { what: 'both children failed' });
  // c2's failure trimmed c1 (one failed job kept): the parent waits for c2 alone
  assert.equal(await tree.job.getState(), 'waiting-children');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 1, ignored: 0, failed: 0 });
  // another failure trims c2: nothing is pending any more, the parent is released
  await kids.add('filler', {}, keepOne);
  await waitFor(() => failedKids.length === 3, { what: 'the filler failed' });
  assert.equal((await kids.getJobCounts('failed')).failed, 1);
  const parentWorker = new Worker('parents', async () => 'parent done', { connection });
  t.after(() => parentWorker.close());
  await waitFor(async () => (await tree.job.getState()) === 'completed', { what: 'the parent completed' });
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
});
