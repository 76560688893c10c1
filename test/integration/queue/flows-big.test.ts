/**
 * Flows past one transaction: a parent's entries live in buckets of its
 * dependency node, a flow too large for one transaction is written in
 * several (parents first, each counting every child it gets from the
 * start), and every read of the entries is paged under the packet limit.
 * Guards: a flow of 10,000 children on zkq's FlowProducer and of 2,000 on
 * BullMQ's (both were refused, with PayloadTooLargeError and an untyped
 * BadArgumentsError), a parent given 20,000 children over time (100,000
 * with ZKQ_LONG_TESTS=1), and the typed error for a node too large alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { openSession, PayloadTooLargeError, QueueStore } from '@zkq/core';
import { FlowProducer, Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { bullEnv, queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const Bull = withBackend(createZooKeeperBackend);

/** A long queue name: longer entry names, so fewer children pass one transaction or one listing. */
const KIDS = 'children-of-one-very-large-parent-job';

test('a flow of 10,000 children is added, every child runs, the parent runs once with all their values', async (t) => {
  const n = 10_000;
  const env = await queueEnv(t);
  const flows = new FlowProducer(env);
  const parents = new Queue('parents', env);
  t.after(() => Promise.all([flows.close(), parents.close()]));
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
  });
  assert.equal(tree.children?.length, n);
  assert.equal(await tree.job.getState(), 'waiting-children');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: n, ignored: 0, failed: 0 });

  let runs = 0;
  let seen: Record<string, number> = {};
  const kids = new Worker(KIDS, async (job) => job.data.i, { ...env, concurrency: 50 });
  const worker = new Worker(
    'parents',
    async (job) => {
      runs++;
      seen = await job.getChildrenValues<number>();
      return 'done';
    },
    env,
  );
  t.after(() => Promise.all([kids.close(), worker.close()]));
  await waitFor(async () => (await parents.getJob(tree.job.id))?.returnvalue === 'done', {
    timeoutMs: 240_000,
    what: 'the parent to complete',
  });
  assert.equal(runs, 1);
  assert.equal(Object.keys(seen).length, n);
  assert.deepEqual(
    Object.values(seen).sort((a, b) => a - b),
    Array.from({ length: n }, (_, i) => i),
  );
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: n, unprocessed: 0, ignored: 0, failed: 0 });
  const page = await tree.job.getDependencies({ processed: { cursor: 0, count: 100 } });
  assert.equal(Object.keys(page.processed ?? {}).length, 100);
});

test("a flow of 2,000 children on BullMQ's FlowProducer runs, the parent with all their values", async (t) => {
  const n = 2000;
  const { connection } = await bullEnv(t);
  const flow = new Bull.FlowProducer({ connection });
  t.after(() => flow.close());
  const tree = await flow.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
  });
  assert.equal(tree.children?.length, n);
  assert.equal(await tree.job.getState(), 'waiting-children');
  let values: Record<string, number> = {};
  const kids = new Bull.Worker(KIDS, async (job) => job.data.i as number, { connection, concurrency: 50 });
  const parent = new Bull.Worker(
    'parents',
    async (job) => {
      values = await job.getChildrenValues();
      return 'done';
    },
    { connection },
  );
  t.after(() => Promise.all([kids.close(), parent.close()]));
  const queue = new Bull.Queue('parents', { connection });
  t.after(() => queue.close());
  await waitFor(async () => (await queue.getJob(tree.job.id as string))?.returnvalue === 'done', {
    timeoutMs: 120_000,
    what: 'the parent to complete',
  });
  assert.equal(Object.keys(values).length, n);
});

/** Gives a waiting parent `n` children over time, in bulks of `per` (`opts.parent`), then runs them all. */
async function parentGrownOverTime(
  t: Parameters<typeof queueEnv>[0] & { after: (fn: () => unknown) => void },
  n: number,
) {
  const per = 1000;
  const env = await queueEnv(t);
  const flows = new FlowProducer(env);
  const parents = new Queue('parents', env);
  t.after(() => Promise.all([flows.close(), parents.close()]));
  // a parent waiting for one child, which runs once all the others were added (so they all count) ...
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: [{ name: 'gate', queueName: 'gate', data: { i: -1 } }],
  });
  const parent = { id: tree.job.id, queue: 'parents' };
  let runs = 0;
  let count = 0;
  const kids = new Worker(KIDS, async (job) => job.data.i, { ...env, concurrency: 10 });
  const worker = new Worker(
    'parents',
    async (job) => {
      runs++;
      count = Object.keys(await job.getChildrenValues()).length;
      return 'done';
    },
    env,
  );
  t.after(() => Promise.all([kids.close(), worker.close()]));
  // ... given many more while children run: it waits for every one
  for (let i = 0; i < n; i += per) {
    await flows.addBulk(
      Array.from({ length: per }, (_, k) => ({ name: 'kid', queueName: KIDS, data: { i: i + k }, opts: { parent } })),
    );
  }
  const gate = new Worker('gate', async (job) => job.data.i, env);
  t.after(() => gate.close());
  // no listing of the parent's dependencies grows with its children: 256 buckets of about n/256
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const deps = new QueueStore(session, 'parents').layout.deps(tree.job.id);
  const buckets = await session.getChildren(deps);
  assert.ok(buckets.length <= 256 && buckets.every((b) => /^b-[0-9a-f]{2}$/.test(b)), buckets.slice(0, 5).join());
  const largest = Math.max(
    ...(await Promise.all(buckets.map(async (b) => (await session.getChildren(`${deps}/${b}`)).length))),
  );
  assert.ok(largest < (3 * n) / 256, `a bucket of ${largest} entries`);
  await waitFor(async () => (await parents.getJob(tree.job.id))?.returnvalue === 'done', {
    timeoutMs: 600_000,
    what: 'the parent to complete',
  });
  assert.equal(runs, 1);
  assert.equal(count, n + 1);
  assert.deepEqual(await tree.job.getDependenciesCount(), {
    processed: n + 1,
    unprocessed: 0,
    ignored: 0,
    failed: 0,
  });
}

test('a parent given 20,000 children over time runs once, after all of them, with all their values', async (t) => {
  await parentGrownOverTime(t, 20_000);
});

test('a parent given 100,000 children over time runs once, after all of them', {
  skip: !process.env.ZKQ_LONG_TESTS && 'long: set ZKQ_LONG_TESTS=1',
}, async (t) => {
  await parentGrownOverTime(t, 100_000);
});

test('a flow whose one node is too large for any transaction is refused with PayloadTooLargeError, nothing written', async (t) => {
  const env = await queueEnv(t);
  const flows = new FlowProducer(env);
  const parents = new Queue('parents', env);
  t.after(() => Promise.all([flows.close(), parents.close()]));
  const big = 'x'.repeat(600_000);
  const err = await flows
    .add({
      name: 'parent',
      queueName: 'parents',
      children: [
        ...Array.from({ length: 10_000 }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
        { name: 'kid', queueName: KIDS, data: { big } },
        { name: 'kid', queueName: KIDS, data: { big } },
      ],
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(err instanceof PayloadTooLargeError, `got ${String(err)}`);
  assert.equal(err.code, 'ZKQ_PAYLOAD_TOO_LARGE');
  assert.match(err.message, /limit/);
  assert.match(err.message, /\d{6,}/, 'the limit in bytes');
  const kids = new Queue(KIDS, env);
  t.after(() => kids.close());
  assert.equal(await parents.count(), 0, 'no parent written');
  assert.equal(await kids.count(), 0, 'no child written');
});
