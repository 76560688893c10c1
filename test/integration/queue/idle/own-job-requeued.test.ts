/**
 * A worker's idle look at the head leaves out the jobs it holds. When one of
 * them is put back to waiting under it (its claim revoked as stalled), the
 * head's wake-up finds nothing for that worker while it still holds the
 * job; once its attempt ends (the lease found lost), the job is claimable
 * by it, and it must take it, not wait for the idle poll.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { revokeByHand } from '../../../helpers/revoke.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a job of its own revoked and requeued while it ran is taken again by the idle worker', async (t) => {
  const env = await queueEnv(t, 20_000);
  const queue = new Queue('requeued', env);
  t.after(() => queue.close());
  const runs: string[] = [];
  const worker = new Worker(
    'requeued',
    async (job, _token, signal) => {
      runs.push(job.id as string);
      if (runs.length > 1) return 'ok';
      // the first attempt hangs until the worker aborts it (its lease lost)
      await new Promise((resolve) => signal?.addEventListener('abort', resolve));
      throw new Error('aborted');
    },
    // the idle poll would only come after the test's deadline: only wake-ups count
    { ...env, concurrency: 2, drainDelay: 600, housekeeping: false, lockDuration: 4000 },
  );
  t.after(() => worker.close(true));
  const lost: string[] = [];
  worker.on('lost', (job) => lost.push(job.id as string));
  await worker.waitUntilReady();

  const job = await queue.add('j', {});
  const id = job.id as string;
  await waitFor(() => runs.length === 1, { what: 'the first attempt running' });

  // what a leader does to a claim it judged stale: the job waits again, the head is rewritten
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'requeued');
  await store.init();
  await revokeByHand(store, id);

  await waitFor(() => lost.includes(id), { what: 'the worker found its lease lost', timeoutMs: 20_000 });
  await waitFor(async () => (await queue.getJobState(id)) === 'completed' || undefined, {
    what: 'the requeued job taken again',
    timeoutMs: 15_000,
  });
  assert.equal(runs.length, 2);
});

test('a job of its own failed and retried at once is taken again by the idle worker', async (t) => {
  const env = await queueEnv(t, 20_000);
  const queue = new Queue('retried', env);
  t.after(() => queue.close());
  let runs = 0;
  const worker = new Worker(
    'retried',
    async () => {
      runs++;
      if (runs === 1) throw new Error('once');
      return 'ok';
    },
    { ...env, concurrency: 2, drainDelay: 600, housekeeping: false },
  );
  t.after(() => worker.close(true));
  await worker.waitUntilReady();
  for (let i = 0; i < 5; i++) {
    runs = 0;
    const job = await queue.add('j', {}, { attempts: 2 });
    await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed' || undefined, {
      what: `the retried job ${i} taken again`,
      timeoutMs: 15_000,
    });
  }
});
