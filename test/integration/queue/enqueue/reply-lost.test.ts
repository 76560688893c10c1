/**
 * An enqueue applied on the server whose reply was lost: the producer, cut
 * off until its jobs have run and been removed, does not send it again. The
 * fault proxy picks the enqueue by a job id it writes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { request, WRITE_OPS } from '../../../helpers/fault-proxy.js';
import { countingWorker, proxied } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('an enqueue whose reply was lost is not sent again after its jobs ran and were removed', async (t) => {
  const env = await queueEnv(t, 15_000);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const completed = new Set<string>();
  let allDone!: () => void;
  const ranAndRemoved = new Promise<void>((r) => {
    allDone = r;
  });
  const w = countingWorker(defer, 'enqueue-reply-lost', { ...env, concurrency: 3 });
  w.worker.on('completed', (job) => {
    completed.add(job.id);
    if (completed.size === 3) allDone();
  });
  // The enqueue commits, its reply is lost, and the producer stays cut off
  // until the worker has run the three jobs and removed them (removeOnComplete).
  const lost = proxy.loseReply(request(WRITE_OPS, 'order-42'), ranAndRemoved);
  const producer = new Queue('enqueue-reply-lost', via);
  defer(() => producer.close());
  const opts = { removeOnComplete: true };
  const added = await producer.addBulk([
    { name: 'a', data: 1, opts },
    { name: 'b', data: 2, opts },
    { name: 'order', data: 3, opts: { ...opts, jobId: 'order-42' } },
  ]);
  assert.ok(lost.hasFired, "the enqueue's reply was lost");
  assert.ok(added.some((j) => j.id === 'order-42'));
  // Whatever the producer enqueued is enqueued by now: let the worker run it all.
  await waitFor(
    async () => {
      const c = await producer.getJobCounts('waiting', 'active', 'prioritized', 'delayed');
      return Object.values(c).every((n) => n === 0);
    },
    { what: 'the queue empty' },
  );
  for (const j of added) assert.equal(w.runs.get(j.id), 1, `job ${j.id} ran once`);
});
