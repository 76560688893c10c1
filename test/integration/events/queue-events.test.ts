import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { JobNotFoundError, Session, TimeoutError } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { spawnFixture } from '../../helpers/process.js';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

/**
 * Adds jobs until `events` reports one of them as `event` (`added` by the
 * queue, `completed`/`failed` by a worker): then that writer knows of the
 * listener and logs events.
 */
async function untilHeard(
  queue: Queue,
  events: QueueEvents,
  what: string,
  event: 'added' | 'completed' | 'failed' = 'added',
): Promise<void> {
  const heard = new Set<string>();
  const onEvent = ({ jobId }: { jobId: string }) => heard.add(jobId);
  events.on(event, onEvent);
  const sent: string[] = [];
  try {
    await waitFor(
      async () => {
        sent.push((await queue.add('probe', 0)).id);
        return sent.some((id) => heard.has(id));
      },
      { what, intervalMs: 200, timeoutMs: 30_000 },
    );
  } finally {
    events.off(event, onEvent);
  }
}

test('queue events: following resumes after an outage longer than the session timeout', async (t) => {
  const env = await queueEnv(t);
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const queue = new Queue('outage', env);
  t.after(() => queue.close());
  const events = new QueueEvents('outage', {
    ...env,
    connection: {
      connectionString: proxy.connectionString,
      sessionTimeout: 2000,
      requestTimeout: 1000,
      retry: { maxAttempts: 2 },
    },
  });
  t.after(() => events.close());
  const errors: Error[] = [];
  events.on('error', (err) => errors.push(err));
  await events.waitUntilReady();
  await untilHeard(queue, events, 'events before the outage');

  const observer = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  t.after(() => observer.close());
  const listeners = new QueueLayout('outage').eventListeners;
  proxy.cut();
  await waitFor(async () => (await observer.getChildren(listeners)).length === 0, {
    what: 'the server to expire the listener session',
  });
  await waitFor(() => errors.length > 0, { what: 'a failed re-read during the outage' });
  proxy.restore();
  await waitFor(async () => (await observer.getChildren(listeners)).length === 1, { what: 'registered again' });
  await untilHeard(queue, events, 'events after the outage');
});

test('waitUntilFinished: resolves with the return value of a job removed on completion', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('removed', env);
  t.after(() => queue.close());
  const events = new QueueEvents('removed', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  const worker = new Worker('removed', async (job) => ({ doubled: (job.data as number) * 2 }), env);
  t.after(() => worker.close());
  await untilHeard(queue, events, 'the worker to log completions', 'completed');
  const job = await queue.add('x', 21, { removeOnComplete: true });
  assert.deepEqual(await job.waitUntilFinished(events, 15_000), { doubled: 42 });
  assert.equal(await queue.getJob(job.id), undefined, 'the record went with the completion');

  const failQueue = new Queue('removed-fail', env);
  t.after(() => failQueue.close());
  const failEvents = new QueueEvents('removed-fail', env);
  t.after(() => failEvents.close());
  await failEvents.waitUntilReady();
  const failing = new Worker(
    'removed-fail',
    async () => {
      throw new Error('boom');
    },
    env,
  );
  t.after(() => failing.close());
  await untilHeard(failQueue, failEvents, 'the worker to log failures', 'failed');
  const gone = await failQueue.add('f', 1, { removeOnFail: true });
  await assert.rejects(gone.waitUntilFinished(failEvents, 15_000), (err: Error) => {
    assert.equal(err.message, 'boom');
    return true;
  });
  assert.equal(await failQueue.getJob(gone.id), undefined, 'the record went with the failure');
});

test('waitUntilFinished: a job finished before the wait; an unknown job; a timeout', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('before', env);
  t.after(() => queue.close());
  const events = new QueueEvents('before', env);
  t.after(() => events.close());
  const worker = new Worker('before', async () => 'done', env);
  t.after(() => worker.close());
  const job = await queue.add('x', {});
  await waitFor(async () => (await queue.getJob(job.id))?.finishedOn, { what: 'the job to finish' });
  assert.equal(await job.waitUntilFinished(events, 15_000), 'done');

  const unknown = await events.waitJobFinished('no-such-job', 15_000).catch((e) => e);
  assert.ok(unknown instanceof JobNotFoundError, String(unknown));
  assert.equal(unknown.code, 'ZKQ_JOB_NOT_FOUND');

  await worker.close();
  const stuck = await queue.add('never-run', {});
  await assert.rejects(stuck.waitUntilFinished(events, 200), TimeoutError);
});

test('waitUntilFinished: close() rejects a pending wait and leaves nothing that keeps the process alive', async (t) => {
  const env = await queueEnv(t);
  const file = fileURLToPath(new URL('../../fixtures/queue/wait-then-close.ts', import.meta.url));
  const child = spawnFixture(file, [
    JSON.stringify({ connectionString: env.connection.connectionString, prefix: env.prefix, queue: 'closing' }),
  ]);
  t.after(() => {
    if (child.child.exitCode === null) child.child.kill('SIGKILL');
  });
  await child.waitForLine(/^closed$/);
  assert.ok(child.lines.includes('rejected ZKQ_CLOSED'), child.lines.join('\n'));
  const deadline = new AbortController();
  const exit = await Promise.race([
    child.exited,
    sleep(20_000, 'still running', { signal: deadline.signal }).catch(() => 'aborted'),
  ]);
  deadline.abort();
  assert.equal(exit, 0, 'the process exits by itself once everything is closed');
});

test('queue events: `drained` is logged once the last job of a batch finishes, once per batch', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('drained', env);
  const events = new QueueEvents('drained', env);
  const worker = new Worker('drained', async () => 'ok', { ...env, concurrency: 2 });
  t.after(() => Promise.all([worker.close(), events.close(), queue.close()]));
  await events.waitUntilReady();
  const firstDrained = new Promise((resolve) => events.once('drained', resolve));
  await untilHeard(queue, events, 'the worker to log events', 'completed');
  await firstDrained; // the probes ran out

  let drained = 0;
  const completedAtDrain: number[] = [];
  const batch = async (n: number) => {
    const jobs = await queue.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: 0 })));
    const seen = drained;
    await waitFor(async () => drained > seen, { what: 'drained after the batch' });
    const states = await Promise.all(jobs.map((j) => j.getState()));
    completedAtDrain.push(states.filter((s) => s === 'completed').length);
  };
  events.on('drained', () => {
    drained++;
  });
  await batch(5);
  await batch(3);
  assert.deepEqual(completedAtDrain, [5, 3], 'each batch had finished when its drained came');
  assert.equal(drained, 2, 'one drained per batch');
});

test('after obliterate, the first add of the queue made again is logged for the listeners it had, before they register again', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('reborn', env);
  t.after(() => queue.close());
  const layout = new QueueLayout('reborn');
  const listener = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  t.after(() => listener.close());
  const logged = async (): Promise<string[]> => {
    const names = await listener.getChildren(layout.eventLog).catch(() => [] as string[]);
    const bodies = await Promise.all(names.map(async (n) => (await listener.getData(`${layout.eventLog}/${n}`)).data));
    return bodies.map(String);
  };
  await queue.add('first', 0); // the queue exists
  // a listener registers by hand, and stays away once the obliterate took its node
  await listener.create(`${layout.eventListeners}/by-hand`, undefined, 'ephemeral');
  const heard: string[] = [];
  await waitFor(
    async () => {
      heard.push((await queue.add('probe', 0)).id);
      return (await logged()).some((body) => heard.some((id) => body.includes(`"jobId":"${id}"`)));
    },
    { what: 'the queue to log events for the listener', intervalMs: 100 },
  );
  await queue.obliterate();
  const after = await queue.add('after', 0);
  const bodies = await logged();
  assert.ok(
    bodies.some((body) => body.includes(`"jobId":"${after.id}"`) && body.includes('"added"')),
    `the add after the obliterate was logged: ${bodies.join(' ')}`,
  );
});
