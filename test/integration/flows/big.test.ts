/**
 * Flows past one transaction: a flow too large for one is written in
 * several (parents first, each counting every child it gets from the
 * start), a parent's entries live in buckets of its dependency node, and
 * every read of them is paged under the packet limit. Guards: a flow of
 * 10,000 children on zkq's FlowProducer (refused with an untyped
 * BadArgumentsError from the read of its ids), and the typed error for a
 * node too large alone in such a flow (the same BadArgumentsError).
 * BullMQ's FlowProducer: big-bullmq.test.ts; a parent given children
 * over time: big-over-time.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PayloadTooLargeError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

/** A long queue name: longer entry names, so fewer children pass one transaction or one listing. */
const KIDS = 'children-of-one-very-large-parent-job';

test('a flow of 10,000 children is added, every child runs, the parent runs once with all their values', async (t) => {
  const n = 10_000;
  const {
    env,
    flows,
    queues: { parents },
  } = await flowEnv(t, 'parents');
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
  // pages ending exactly at the end: the last one says 0, none is lost or repeated
  const paged = new Map<string, unknown>();
  const cursors: number[] = [];
  let cursor = 0;
  do {
    const p = await tree.job.getDependencies({ processed: { cursor, count: 2_500 } });
    for (const [k, v] of Object.entries(p.processed ?? {})) paged.set(k, v);
    cursor = p.nextProcessedCursor ?? -1;
    cursors.push(cursor);
  } while (cursor > 0);
  assert.deepEqual(cursors, [2_500, 5_000, 7_500, 0]);
  assert.equal(paged.size, n);
  assert.deepEqual(Object.fromEntries(paged), seen);
});

test('a flow whose one node is too large for any transaction is refused with PayloadTooLargeError, nothing written', async (t) => {
  const {
    env,
    flows,
    queues: { parents },
  } = await flowEnv(t, 'parents');
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

test('a split flow whose root joins an existing parent: the root waits for its 3,000 children, the parent for the root', async (t) => {
  const n = 3000;
  const {
    env,
    flows,
    queues: { tops },
  } = await flowEnv(t, 'tops', 'parents');
  const top = await flows.add({ name: 'top', queueName: 'tops', children: [{ name: 'gate', queueName: 'gate' }] });
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    opts: { parent: { id: top.job.id, queue: 'tops' } },
    children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
  });
  assert.equal(await tree.job.getState(), 'waiting-children');
  assert.deepEqual(await top.job.getDependenciesCount({ unprocessed: true }), { unprocessed: 2 });
  const order: string[] = [];
  const workers = [
    new Worker('gate', async () => 'gate', env),
    new Worker(KIDS, async (job) => job.data.i, { ...env, concurrency: 20 }),
    new Worker(
      'parents',
      async (job) => {
        order.push('parent');
        return Object.keys(await job.getChildrenValues()).length;
      },
      env,
    ),
    new Worker(
      'tops',
      async (job) => {
        order.push('top');
        return job.getChildrenValues();
      },
      env,
    ),
  ];
  t.after(() => Promise.all(workers.map((w) => w.close())));
  await waitFor(async () => (await tops.getJobState(top.job.id)) === 'completed', {
    timeoutMs: 240_000,
    what: 'the top parent to complete',
  });
  assert.deepEqual(order, ['parent', 'top']);
  const values = (await tops.getJob(top.job.id))?.returnvalue as Record<string, unknown>;
  assert.equal(values[`${env.prefix}:parents:${tree.job.id}`], n);
});
