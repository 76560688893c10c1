/**
 * Draining and cleaning a queue that holds jobs of flows, on the ZooKeeper
 * backend (BullMQ's "hard" removal): a child taken away leaves its parent's
 * dependencies; a parent left waiting for nothing goes too in the same
 * queue, and is released to wait in another; a finished parent takes its
 * dependencies along.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer, QueueEvents } = withBackend(createZooKeeperBackend);

test('drain takes children out of their parents: a parent in the queue goes with them, one elsewhere waits', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const a = new Queue('a', { connection });
  const b = new Queue('b', { connection });
  t.after(() => Promise.all([flow.close(), a.close(), b.close()]));
  const kid = (queueName: string) => ({ name: 'kid', queueName });
  const here = await flow.add({ name: 'here', queueName: 'a', children: [kid('a'), kid('a')] });
  const there = await flow.add({ name: 'there', queueName: 'b', children: [kid('a')] });
  const waits = await flow.add({ name: 'waits', queueName: 'a', children: [kid('b')] });
  await a.add('plain', {});

  await a.drain();
  assert.equal(await here.job.getState(), 'unknown');
  assert.equal(await there.job.getState(), 'waiting');
  assert.equal(await waits.job.getState(), 'waiting-children');
  assert.deepEqual(await a.getJobCounts('wait', 'waiting-children'), { wait: 0, 'waiting-children': 1 });
  assert.deepEqual(await there.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
});

test('clean removes a failed child from its parent and a completed parent with its dependencies', async (t) => {
  const { connection, flow, queue } = await bullFlowEnv(t);
  const stuck = await flow.add({ name: 'stuck', queueName: 'q', children: [{ name: 'bad', queueName: 'q' }] });
  const done = await flow.add({ name: 'done', queueName: 'q', children: [{ name: 'good', queueName: 'q' }] });
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name === 'bad') throw new Error('broke');
      return job.name;
    },
    { connection },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await done.job.getState()) === 'completed');
  await waitFor(async () => (await stuck.children?.[0]?.job.getState()) === 'failed');

  assert.equal((await queue.clean(0, 0, 'failed')).length, 1);
  assert.equal(await stuck.job.getState(), 'unknown', 'left waiting for nothing in its own queue, it goes');

  await queue.clean(0, 0, 'completed');
  assert.equal(await done.job.getState(), 'unknown');
  assert.deepEqual(await done.job.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
});

test('a parent taken along by a drain is removed before its last child, never released on the way', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  const events = new QueueEvents('q', { connection });
  t.after(() => Promise.all([flow.close(), queue.close(), events.close()]));
  await events.waitUntilReady();
  const tree = await flow.add({ name: 'parent', queueName: 'q', children: [{ name: 'kid', queueName: 'q' }] });
  const seen: string[] = [];
  events.on('waiting', ({ jobId }) => {
    if (jobId === tree.job.id) seen.push('waiting');
  });
  events.on('removed', ({ jobId }) => {
    if (jobId === tree.job.id) seen.push('removed');
  });
  await queue.drain();
  await waitFor(() => seen.includes('removed'), { what: 'the parent removed' });
  assert.deepEqual(seen, ['removed']);
});
