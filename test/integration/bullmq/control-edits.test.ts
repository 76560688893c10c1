/**
 * BullMQ's edits of one job on the ZooKeeper backend: changeDelay,
 * changePriority, updateData, log and clearLogs. A job this Worker runs is
 * edited in its attempt (written with its finish); a job running elsewhere
 * is refused, since rewriting its record would revoke its attempt. Log lines
 * live apart from the record: any job may be logged to.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker, QueueEvents } = withBackend(createZooKeeperBackend);

async function bullEnv(t: { name?: string; after(fn: () => unknown): void }, name: string) {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue(name, { connection });
  const zkq = new ZkqQueue(name, env);
  t.after(() => Promise.all([queue.close(), zkq.close()]));
  return { connection, queue, zkq };
}

/** The job's stored log lines, read through zkq's own Queue. */
async function logsOf(zkq: ZkqQueue, id: string | undefined): Promise<string[] | undefined> {
  return (await zkq.getJob(id as string))?.getLogs();
}

test('changeDelay reschedules a delayed job (a delayed event with the new due time); other jobs are refused', async (t) => {
  const { connection, queue } = await bullEnv(t, 'cd');
  const events = new QueueEvents('cd', { connection, lastEventId: '0' });
  t.after(() => events.close());
  await events.waitUntilReady();
  const delays: number[] = [];
  events.on('delayed', ({ delay }) => delays.push(delay));
  const job = await queue.add('later', { v: 1 }, { delay: 3_600_000 });
  await job.changeDelay(50);
  assert.equal(job.delay, 50);
  assert.equal((await queue.getJob(job.id as string))?.delay, 50);
  const worker = new Worker('cd', async () => 'ran', { connection });
  t.after(() => worker.close());
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the rescheduled job to run' });
  await waitFor(() => delays.length === 2, { what: 'two delayed events' });
  assert.ok((delays[1] as number) < (delays[0] as number), 'the second due time is the earlier one');

  await assert.rejects(job.changeDelay(10), {
    code: -3,
    message: `Job ${job.id} is not in the delayed state. changeDelay`,
  });
  await job.remove();
  await assert.rejects(job.changeDelay(10), { code: -1, message: `Missing key for job ${job.id}. changeDelay` });
});

test('changePriority moves a waiting job to the lane of its new priority, lifo first; a delayed job keeps it', async (t) => {
  const { connection, queue } = await bullEnv(t, 'cp');
  await queue.pause();
  const a = await queue.add('a', {});
  const b = await queue.add('b', {}, { priority: 8 });
  const c = await queue.add('c', {}, { priority: 16 });
  const d = await queue.add('d', {}, { priority: 16 });
  await c.changePriority({ priority: 1 }); // before b now
  await d.changePriority({ priority: 0, lifo: true }); // before everything
  await b.changePriority({ priority: 0 }); // a plain job now, after a
  assert.equal(c.priority, 1);
  assert.equal((await queue.getJob(c.id as string))?.priority, 1);
  assert.equal(await b.getState(), 'waiting');
  const later = await queue.add('later', {}, { delay: 3_600_000 });
  await later.changePriority({ priority: 10 });
  assert.equal(await later.getState(), 'delayed');
  assert.equal((await queue.getJob(later.id as string))?.priority, 10);
  await assert.rejects(later.changePriority({ priority: -1 }), RangeError);

  const order: string[] = [];
  const worker = new Worker('cp', async (job) => void order.push(job.name), { connection });
  t.after(() => worker.close());
  await queue.resume();
  await waitFor(() => order.length === 4, { what: 'four jobs to run' });
  assert.deepEqual(order, ['d', 'a', 'b', 'c']);

  await a.remove();
  await assert.rejects(a.changePriority({ priority: 2 }), {
    code: -1,
    message: `Missing key for job ${a.id}. changePriority`,
  });
});

test('updateData, log and clearLogs rewrite a waiting job; a missing job is an error', async (t) => {
  const { queue, zkq } = await bullEnv(t, 'ud');
  const job = await queue.add('edit', { foo: 'bar' }, { keepLogs: 2 });
  await job.updateData({ baz: 'qux' });
  assert.deepEqual((await queue.getJob(job.id as string))?.data, { baz: 'qux' });
  assert.equal(await job.log('one'), 1);
  assert.equal(await job.log('two'), 2);
  assert.equal(await job.log('three'), 2, 'keepLogs of the job');
  assert.deepEqual(await logsOf(zkq, job.id), ['two', 'three']);
  assert.equal(await queue.addJobLog(job.id as string, 'four', 1), 1);
  assert.deepEqual(await logsOf(zkq, job.id), ['four']);
  await job.clearLogs();
  assert.deepEqual(await logsOf(zkq, job.id), []);
  assert.equal(await job.getState(), 'waiting');

  await job.remove();
  await assert.rejects(job.updateData({ x: 1 }), { code: -1, message: `Missing key for job ${job.id}. updateData` });
  await assert.rejects(job.log('x'), { code: -1, message: `Missing key for job ${job.id}. addLog` });
  await job.clearLogs(); // nothing to clear: no error, as BullMQ
});

test('a running job edits itself through its attempt; another process is refused instead of revoking it (logs aside)', async (t) => {
  const { connection, queue, zkq } = await bullEnv(t, 'run');
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const worker = new Worker(
    'run',
    async (job) => {
      await job.updateData({ step: 1 });
      await job.log('first');
      await job.log('second');
      await job.clearLogs(1);
      await job.changePriority({ priority: 5 });
      started();
      await released;
      return job.data;
    },
    { connection },
  );
  t.after(() => worker.close());
  t.after(release);
  const job = await queue.add('self', { step: 0 });
  await running;
  await assert.rejects(job.updateData({ step: 'other' }), { code: 'ZKQ_JOB_STATE' });
  // log lines live apart from the record: another process logs to a running job, as in BullMQ
  assert.equal(await job.log('other'), 2);
  await assert.rejects(job.changePriority({ priority: 3 }), { code: 'ZKQ_JOB_STATE' });
  await assert.rejects(job.changeDelay(10), { code: -3 });
  release();
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the job to complete' });
  const done = await queue.getJob(job.id as string);
  assert.deepEqual(done?.data, { step: 1 });
  assert.deepEqual(done?.returnvalue, { step: 1 });
  assert.equal(done?.priority, 5);
  assert.deepEqual(await logsOf(zkq, job.id), ['second', 'other']);
});
