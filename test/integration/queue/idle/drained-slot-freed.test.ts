/**
 * A worker with free slots waits for work in the idle line while its last
 * jobs run. When they finish, the queue is drained: the worker's `drained`
 * and the QueueEvents `drained` (logged by the worker that finds the queue
 * idle after its own finishes) must come then, not at the next idle poll.
 */
import { test } from 'node:test';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('drained comes once the last job of a worker with free slots finishes', async (t) => {
  const env = await queueEnv(t, 20_000);
  const queue = new Queue('drained-slots', env);
  const events = new QueueEvents('drained-slots', env);
  t.after(() => Promise.all([events.close(), queue.close()]));
  await events.waitUntilReady();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  // the idle poll would only come after the test's deadline: only wake-ups count
  const worker = new Worker('drained-slots', () => gate, { ...env, concurrency: 3, drainDelay: 600 });
  t.after(() => worker.close(true));
  let workerDrained = 0;
  let queueDrained = 0;
  worker.on('drained', () => workerDrained++);
  events.on('drained', () => queueDrained++);
  await worker.waitUntilReady();
  const job = await queue.add('j', {});
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'active' || undefined, {
    what: 'the job running',
  });
  release();
  await waitFor(() => workerDrained > 0, { what: "the worker's drained", timeoutMs: 15_000 });
  await waitFor(() => queueDrained > 0, { what: 'the queue events drained', timeoutMs: 15_000 });
});
