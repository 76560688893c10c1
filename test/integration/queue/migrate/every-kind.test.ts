/**
 * A migrated queue keeps every kind of job where it was and each behaves as
 * before: waiting, lifo, prioritized and delayed jobs run; completed and
 * failed ones stay (a failed one retried runs); a flow's parent waiting for
 * its children runs once they are done, with their values; a scheduler goes
 * on past its next iteration; a deduplication key still holds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import type { Session } from '@zkq/core';
import { migrateQueue, QueueStore } from '@zkq/core/internal';
import { FlowProducer, Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { layoutOf, leaveActive, setLayout2 } from '../../../helpers/layout-2.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

const Bull = withBackend(createZooKeeperBackend);

test('every kind of job is still there after migration and runs to its outcome', async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t, env)) as Session;
  const queue = new Queue('kinds', env);
  t.after(() => queue.close());

  // finished jobs, made before the queue turns layout 2
  const ok = await queue.add('ok', { v: 1 });
  const bad = await queue.add('bad', { v: 2 });
  const first = new Worker(
    'kinds',
    async (job) => {
      if (job.name === 'bad') throw new Error('bad the first time');
      return job.data.v;
    },
    env,
  );
  await waitFor(async () => {
    const c = await queue.getJobCounts('completed', 'failed');
    return c.completed === 1 && c.failed === 1;
  });
  await first.close();

  const waiting = await queue.add('plain', { v: 3 });
  const lifo = await queue.add('lifo', { v: 4 }, { lifo: true });
  const prioritized = await queue.add('prio', { v: 5 }, { priority: 5 });
  const delayed = await queue.add('later', { v: 6 }, { delay: 1500 });
  const deduped = await queue.add('dedup', { v: 7 }, { deduplication: { id: 'key-1' } });
  const dead = await queue.add('dead', { v: 8 });
  const flows = new FlowProducer(env);
  t.after(() => flows.close());
  const flow = await flows.add({
    name: 'parent',
    queueName: 'kinds',
    data: { v: 0 },
    children: [
      { name: 'child', queueName: 'kinds', data: { v: 10 } },
      { name: 'child', queueName: 'kinds', data: { v: 11 } },
    ],
  });
  const bull = new Bull.Queue('kinds', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => bull.close());
  await bull.upsertJobScheduler('tick', { every: 400 }, { name: 'tick', data: { v: 100 } });
  await queue.close();

  await leaveActive(session, 'kinds', [dead.id]);
  await setLayout2(session, 'kinds');
  assert.deepEqual(await migrateQueue(new QueueStore(session, 'kinds')), { from: 2, to: 3, jobsFixed: 1 });
  assert.equal(await layoutOf(session, 'kinds'), 3);

  const after = new Queue('kinds', env);
  t.after(() => after.close());
  const stateOf = async (id: string) => (await after.getJob(id))?.getState();
  assert.equal(await stateOf(ok.id), 'completed');
  assert.equal(await stateOf(bad.id), 'failed');
  assert.equal(await stateOf(waiting.id), 'waiting');
  assert.equal(await stateOf(lifo.id), 'waiting');
  assert.equal(await stateOf(prioritized.id), 'prioritized');
  assert.equal(await stateOf(delayed.id), 'delayed');
  assert.equal(await stateOf(dead.id), 'waiting');
  assert.equal(await stateOf(flow.job.id), 'waiting-children');
  const again = await after.add('dedup', { v: 70 }, { deduplication: { id: 'key-1' } });
  assert.equal(again.id, deduped.id, 'the deduplication key still names its job');
  assert.equal((await bull.getJobSchedulers()).length, 1);

  const ran = new Map<string, number>();
  const ticks: string[] = [];
  const worker = new Worker(
    'kinds',
    async (job) => {
      if (job.name === 'tick') ticks.push(job.id);
      else ran.set(job.id, (ran.get(job.id) ?? 0) + 1);
      if (job.name === 'parent') return Object.values(await job.getChildrenValues()).sort();
      return job.data.v;
    },
    { ...env, concurrency: 3, drainDelay: 1 },
  );
  t.after(() => worker.close());
  await (await after.getJob(bad.id))?.retry();

  const outcome = [waiting, lifo, prioritized, delayed, deduped, dead, bad, flow.job];
  await waitFor(
    async () => {
      for (const job of outcome) if ((await stateOf(job.id)) !== 'completed') return false;
      return ticks.length >= 2;
    },
    { timeoutMs: 30_000, what: 'every job completed and two scheduler iterations' },
  );
  for (const job of outcome) assert.equal(ran.get(job.id), 1, `${job.name} ${job.id} ran once`);
  assert.deepEqual((await after.getJob(flow.job.id))?.returnvalue, [10, 11]);
  assert.equal((await after.getJob(dead.id))?.stalledCounter, 1);
  assert.equal((await after.getJob(waiting.id))?.stalledCounter, 0);
  assert.equal((await after.getJob(ok.id))?.returnvalue, 1, 'a completed job keeps its result');
  assert.equal(new Set(ticks).size, ticks.length, 'each iteration ran once');
});
