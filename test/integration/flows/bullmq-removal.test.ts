/**
 * Removing parts of a flow on the ZooKeeper backend: a whole tree, refused
 * as a whole while one of its jobs runs; the unprocessed children of a
 * parent, theirs included.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

test('removing a tree with a running job removes none of it; once it is done, all of it', async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const books = new Queue('books', { connection });
  const pages = new Queue('pages', { connection });
  const worker = new Worker('pages', null, { connection });
  t.after(() => Promise.all([flow.close(), books.close(), pages.close(), worker.close()]));
  const tree = await flow.add({
    name: 'book',
    queueName: 'books',
    children: [
      { name: 'page', queueName: 'pages', data: { n: 1 } },
      { name: 'page', queueName: 'pages', data: { n: 2 } },
    ],
  });
  const running = (await worker.getNextJob('tok')) as Job;
  const [a, b] = (tree.children ?? []).map((c) => c.job);
  const idle = running.id === a?.id ? b : a;
  await assert.rejects(tree.job.remove(), /could not be removed because it is locked/);
  assert.equal(await tree.job.getState(), 'waiting-children');
  assert.equal(await running.getState(), 'active');
  assert.equal(await idle?.getState(), 'waiting');

  await running.moveToCompleted('done', 'tok', false);
  await tree.job.remove();
  for (const j of [tree.job, running, idle]) assert.equal(await j?.getState(), 'unknown');
  assert.deepEqual(await pages.getJobCounts('completed', 'wait'), { completed: 0, wait: 0 });
});

test('removeUnprocessedChildren removes waiting children and their own children, and releases the parent', async (t) => {
  const { flow, queue } = await bullFlowEnv(t);
  const tree = await flow.add({
    name: 'root',
    queueName: 'q',
    children: [
      { name: 'mid', queueName: 'q', children: [{ name: 'leaf', queueName: 'q' }] },
      { name: 'plain', queueName: 'q' },
    ],
  });
  await tree.job.removeUnprocessedChildren();
  assert.equal(await tree.job.getState(), 'waiting');
  const ids = (await queue.getJobs(['wait', 'waiting-children', 'delayed'])).map((j) => j.name);
  assert.deepEqual(ids, ['root']);
});
