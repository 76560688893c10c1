/** The event log stays bounded: about its last EVENTS_KEEP nodes, progress updates included. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENTS_KEEP } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';
import { countNodes, prefixSession } from '../../helpers/znodes.js';

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
