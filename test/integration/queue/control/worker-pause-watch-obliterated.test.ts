/**
 * A Worker follows its queue's pause flag with a data watch on `meta`. When
 * the queue is obliterated under it, `meta` is deleted: the watch fires, and
 * the Worker watches for `meta`'s creation (an exists-watch), claiming
 * nothing meanwhile and reporting no error; once the queue is made again it
 * follows the flag and takes jobs as before. It read `meta` again every half
 * second instead, emitting an error each time, until the queue came back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a worker whose queue is obliterated watches for it to be made again, without errors, then takes its jobs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const done: string[] = [];
  const errors: Error[] = [];
  const worker = new Worker('q', async (job) => job.id, { ...env, housekeeping: false });
  worker.on('completed', (job) => done.push(job.id as string));
  worker.on('error', (err) => errors.push(err));
  t.after(() => worker.close());
  const first = await queue.add('a', {});
  await waitFor(() => done.includes(first.id as string), { what: 'the first job' });
  const session = await worker.client;
  await waitFor(() => session.armedWatches().includes('data:/q/meta'), { what: 'the pause watch' });

  await queue.obliterate();
  await waitFor(() => session.armedWatches().includes('exists:/q/meta'), {
    what: "a watch for meta's creation",
    timeoutMs: 10_000,
  });
  assert.deepEqual(
    errors.map((e) => e.message),
    [],
    'no error while the queue is gone',
  );

  // a new Queue makes the queue again (the obliterated one caches its directories)
  const fresh = new Queue('q', env);
  t.after(() => fresh.close());
  const again = await fresh.add('b', {});
  await waitFor(() => done.includes(again.id as string), { what: 'the job of the queue made again' });
  await waitFor(() => session.armedWatches().includes('data:/q/meta'), { what: 'the pause watch again' });
  assert.deepEqual(
    errors.map((e) => e.message),
    [],
  );
});
