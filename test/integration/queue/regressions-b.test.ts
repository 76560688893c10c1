/**
 * Regressions: one job's oversized progress must not cost the worker's other
 * jobs their leases; the event log stays bounded; a QueueEvents listener
 * cannot make addBulk half-applied.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PayloadTooLargeError, ZkqError } from '@zkq/core';
import { EVENTS_KEEP } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';
import { countNodes, prefixSession } from '../../helpers/znodes.js';

test('a 1.1 MB progress is refused for its own job; the worker keeps every other lease', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('big-progress', env);
  t.after(() => queue.close());
  const lockDuration = 1000;
  // Every job outlives several leases, so leases that are not renewed run out and get revoked.
  const hold = 4 * lockDuration;
  const runs = new Map<string, number>();
  let progressError: unknown = 'updateProgress resolved';
  const worker = new Worker(
    'big-progress',
    async (job) => {
      runs.set(job.name, (runs.get(job.name) ?? 0) + 1);
      if (job.name === 'big') {
        progressError = await job.updateProgress('p'.repeat(1_100_000)).then(
          () => 'updateProgress resolved',
          (err: unknown) => err,
        );
      }
      await sleep(hold);
      return job.name;
    },
    { ...env, concurrency: 3, lockDuration, lockRenewTime: lockDuration / 4, stalledInterval: lockDuration / 4 },
  );
  t.after(() => worker.close());
  const completed: string[] = [];
  const harmed: string[] = [];
  worker.on('completed', (job) => completed.push(job.name));
  worker.on('lost', (job) => harmed.push(`lost ${job.name}`));
  worker.on('stalled', (id) => harmed.push(`stalled ${id}`));
  worker.on('error', () => undefined); // renewal errors are what this test provokes
  await queue.addBulk([
    { name: 'small-1', data: {} },
    { name: 'big', data: {} },
    { name: 'small-2', data: {} },
  ]);
  await waitFor(() => completed.length === 3 || harmed.length > 0, {
    timeoutMs: 40_000,
    what: 'all three jobs done, or one revoked',
  });
  assert.deepEqual(harmed, [], 'no job lost its lease');
  assert.deepEqual(
    [...runs.entries()].sort(),
    [
      ['big', 1],
      ['small-1', 1],
      ['small-2', 1],
    ],
    'each job ran once',
  );
  assert.ok(progressError instanceof PayloadTooLargeError, `updateProgress refused with: ${String(progressError)}`);
  assert.deepEqual(completed.sort(), ['big', 'small-1', 'small-2']);
});

test('the event log keeps about its last EVENTS_KEEP nodes, progress updates included', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('event-log', env);
  t.after(() => queue.close());
  const events = new QueueEvents('event-log', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  let heard = 0;
  events.on('progress', () => heard++);
  const plain = await prefixSession(t, env);
  await queue.waitUntilReady();
  const before = await countNodes(plain, '/event-log');
  const updates = 2 * EVENTS_KEEP;
  const worker = new Worker(
    'event-log',
    async (job) => {
      for (let i = 1; i <= updates; i++) await job.updateProgress(i);
      return 'done';
    },
    env,
  );
  t.after(() => worker.close());
  const done = nextEvent(worker, 'completed', 60_000);
  await queue.add('chatty', {}, { removeOnComplete: true });
  await done;
  await waitFor(() => heard > 0, { what: 'progress events reach the listener' });
  // The log is trimmed now and then, not on every write: allow one trim interval (and a few nodes of the job itself).
  const bound = EVENTS_KEEP + 250;
  let grown = 0;
  await waitFor(
    async () => {
      grown = (await countNodes(plain, '/event-log')) - before;
      return grown <= bound;
    },
    { timeoutMs: 10_000, intervalMs: 500, what: 'the event log trimmed' },
  ).catch(() => undefined);
  assert.ok(grown <= bound, `${updates} progress updates left ${grown} more nodes in the queue (bound ${bound})`);
});

test('addBulk with a listener: all of it or nothing, never part', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('bulk-events', env);
  t.after(() => queue.close());
  const events = new QueueEvents('bulk-events', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  await queue.waitUntilReady();
  // Long names: the `added` events in the same transaction weigh about as much as the records.
  const jobs = Array.from({ length: 500 }, (_, i) => ({ name: `${i}-`.padEnd(1000, 'n'), data: { i } }));
  const outcome = await queue.addBulk(jobs).then(
    (added) => ({ added: added.length }),
    (error: unknown) => ({ error }),
  );
  const stored = await queue.getJobCounts('waiting');
  if ('error' in outcome) {
    assert.ok(
      outcome.error instanceof ZkqError && typeof outcome.error.code === 'string',
      `a typed error: ${String(outcome.error)}`,
    );
    assert.equal(stored.waiting, 0, `addBulk failed (${String(outcome.error)}) yet ${stored.waiting} jobs were added`);
  } else {
    assert.equal(outcome.added, 500);
    assert.equal(stored.waiting, 500);
  }
});
