/**
 * Retrying a finished child makes it pending again for its parent (BullMQ's
 * reprocess): a completed child's processed entry, or a failed child's
 * ignored or failed one, becomes unprocessed, and a parent still waiting
 * for children waits for it too. Siblings retried at once each count.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Job, Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import type { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

type Ctx = { name?: string; after: (fn: () => unknown) => void };

async function setUp(t: Ctx, children: { data?: unknown; opts?: Record<string, unknown> }[]) {
  const {
    env,
    flows,
    queues: { parents, kids },
  } = await flowEnv(t, 'parents', 'kids');
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: children.map((c) => ({ name: 'kid', queueName: 'kids', ...c })),
  });
  const kidJobs = (tree.children ?? []).map((c) => c.job);
  return { env, tree, parents, kids, kidJobs };
}

function startKids(
  t: Ctx,
  env: Awaited<ReturnType<typeof queueEnv>>,
  processor: (job: Job) => Promise<unknown>,
): Worker {
  const worker = new Worker('kids', processor, env);
  t.after(() => worker.close());
  return worker;
}

const stateOf = (q: Queue, id: string) => q.getJob(id).then((j) => j?.getState());

test('a completed child retried is pending again: the parent waits for its second run', async (t) => {
  // the second child is delayed: the parent keeps waiting for it
  const { env, tree, kids, kidJobs } = await setUp(t, [{ data: { n: 1 } }, { opts: { delay: 600_000 } }]);
  const [first, second] = kidJobs as [Job, Job];
  const worker = startKids(t, env, async () => 'done');
  await waitFor(async () => (await stateOf(kids, first.id)) === 'completed', { what: 'the first child to complete' });
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 1, unprocessed: 1, ignored: 0, failed: 0 });
  await worker.close();

  await kids.getJob(first.id).then((j) => j?.retry('completed'));
  assert.equal(await stateOf(kids, first.id), 'waiting');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });
  assert.equal(await tree.job.getState(), 'waiting-children');

  // both run now: the parent is released once, after both
  await kids.getJob(second.id).then((j) => j?.promote());
  startKids(t, env, async (job) => `again ${job.id}`);
  await waitFor(async () => (await tree.job.getState()) === 'waiting', { what: 'the parent to be released' });
  const values = await tree.job.getChildrenValues();
  assert.deepEqual(Object.values(values).sort(), [`again ${first.id}`, `again ${second.id}`].sort());
});

test('a failed child ignored by its parent and retried is unprocessed again', async (t) => {
  const { env, tree, kids, kidJobs } = await setUp(t, [{ opts: { ignoreDependencyOnFailure: true } }]);
  const [child] = kidJobs as [Job];
  const worker = startKids(t, env, async () => {
    throw new Error('broken');
  });
  await waitFor(async () => (await tree.job.getState()) === 'waiting', { what: 'the parent to go on' });
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 1, failed: 0 });
  await worker.close();

  await kids.getJob(child.id).then((j) => j?.retry('failed'));
  assert.equal(await stateOf(kids, child.id), 'waiting');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: 1, ignored: 0, failed: 0 });
});

test('siblings retried in one retryJobs call each count: the parent waits for all of them', async (t) => {
  const { env, tree, kids, kidJobs } = await setUp(
    t,
    Array.from({ length: 6 }, (_, n) => ({ data: { n } })),
  );
  // every child runs once; the parent's own queue has no worker, so it stays released
  const worker = startKids(t, env, async (job) => (job.data as { n: number }).n);
  await waitFor(async () => (await tree.job.getState()) === 'waiting', { what: 'the parent to be released' });
  await worker.close();
  await kids.retryJobs({ state: 'completed' });
  assert.equal((await kids.getJobCounts('waiting')).waiting, kidJobs.length, 'every child was retried');
  assert.deepEqual(await tree.job.getDependenciesCount(), {
    processed: 0,
    unprocessed: kidJobs.length,
    ignored: 0,
    failed: 0,
  });
});
