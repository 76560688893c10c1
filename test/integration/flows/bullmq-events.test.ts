/**
 * Events of a flow on the ZooKeeper backend: a parent released by a child
 * that a worker of another queue (on its own session) finished is reported
 * on the parent's queue.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer, QueueEvents } = withBackend(createZooKeeperBackend);

test("a child finished in another queue reports its parent's release there: waiting, or delayed by its delay", async (t) => {
  const { connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const tops = new Queue('tops', { connection });
  const events = new QueueEvents('tops', { connection });
  t.after(() => Promise.all([flow.close(), tops.close(), events.close()]));
  await events.waitUntilReady();
  const seen: { event: string; jobId: string; delay?: number }[] = [];
  events.on('waiting', ({ jobId }) => seen.push({ event: 'waiting', jobId }));
  events.on('delayed', ({ jobId, delay }) => seen.push({ event: 'delayed', jobId, delay: Number(delay) }));

  const addedAt = Date.now();
  const now = await flow.add({ name: 'now', queueName: 'tops', children: [{ name: 'kid', queueName: 'kids' }] });
  const later = await flow.add({
    name: 'later',
    queueName: 'tops',
    opts: { delay: 60_000 },
    children: [{ name: 'kid', queueName: 'kids' }],
  });
  const worker = new Worker('kids', async () => 'ok', { connection });
  t.after(() => worker.close());

  await waitFor(() => seen.some((e) => e.event === 'waiting' && e.jobId === now.job.id), { what: 'waiting' });
  const delayed = await waitFor(() => seen.find((e) => e.event === 'delayed' && e.jobId === later.job.id), {
    what: 'delayed',
  });
  assert.ok((delayed.delay ?? 0) > addedAt, 'the event carries the due time');
  assert.equal(await later.job.getState(), 'delayed');
});
