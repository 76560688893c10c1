/**
 * Job.remove() called for many jobs at once (BullMQ's
 * `Promise.all(jobs.map((j) => j.remove()))`) on the ZooKeeper backend: the
 * removals go together, so the requests sent stay far below one per job
 * (one by one, each removal read its record, looked at its claim and listed
 * its container in series). Running jobs, jobs of flows and missing ids
 * keep their single-removal answers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend, type ZooKeeperQueueBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, QueueEvents, FlowProducer } = withBackend(createZooKeeperBackend);

const JOBS = 300;

test('removing many waiting and delayed jobs at once sends fewer requests than jobs', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('rm', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const removedEvents: string[] = [];
  events.on('removed', ({ jobId }) => void removedEvents.push(jobId));
  const queue = new Queue('rm', { connection });
  t.after(() => queue.close());
  const waiting = await queue.addBulk(Array.from({ length: JOBS / 2 }, (_, i) => ({ name: 'w', data: { i } })));
  const delayed = await queue.addBulk(
    Array.from({ length: JOBS / 2 }, (_, i) => ({ name: 'd', data: { i }, opts: { delay: 60_000 + i * 150 } })),
  );
  const store = await (queue.backend as unknown as ZooKeeperQueueBackend).ctx.store();
  const before = store.session.stats.requests;
  await Promise.all([...delayed, ...waiting].map((j) => j.remove()));
  const sent = store.session.stats.requests - before;
  assert.ok(sent < JOBS / 3, `${sent} requests for ${JOBS} removals`);
  assert.equal(await queue.getJobCountByTypes('waiting', 'delayed'), 0);
  await waitFor(() => removedEvents.length === JOBS, { what: 'a removed event per job' });
});

test('removals made together keep their answers: a running job stays, a missing id is 1, a flow goes whole', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('rmx', { connection });
  const flows = new FlowProducer({ connection });
  t.after(() => Promise.all([queue.close(), flows.close()]));
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const busy = await queue.add('busy', {});
  const worker = new Worker('rmx', () => held, { connection });
  t.after(async () => {
    release();
    await worker.close();
  });
  await waitFor(async () => (await busy.getState()) === 'active', { what: 'the job to run' });
  const plain = await queue.add('plain', {});
  const tree = await flows.add({
    name: 'parent',
    queueName: 'rmx-flow',
    children: [{ name: 'kid', queueName: 'rmx' }],
  });
  const kid = tree.children?.[0]?.job;
  assert.ok(kid);
  const answers = await Promise.all([
    queue.remove(busy.id as string),
    queue.remove(plain.id as string),
    queue.remove('no-such-job'),
    queue.remove(kid.id as string),
  ]);
  assert.deepEqual(answers, [0, 1, 1, 1]);
  assert.equal(await busy.getState(), 'active');
  assert.equal(await queue.getJobState(plain.id as string), 'unknown');
  // the child left its parent, which then waits (released), as removed one by one
  const flowQueue = new Queue('rmx-flow', { connection });
  t.after(() => flowQueue.close());
  await waitFor(async () => (await flowQueue.getJobState(tree.job.id as string)) === 'waiting', {
    what: 'the parent released by its removed child',
  });
});
