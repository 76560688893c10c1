/**
 * zkq's Worker: a job given a child by `opts.parent` while it ran, then
 * removed as it finishes (removeOnComplete / removeOnFail `true`), takes its
 * dependencies along: its id used again starts with none.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { type Job, Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

async function giveChildThenFinish(t: TestContext, fails: boolean) {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  const worker = new Worker(
    'q',
    async (job: Job) => {
      if (job.name !== 'host') return 'kid done';
      const kid = await queue.add('kid', {}, { jobId: 'kid', parent: { id: job.id, queue: 'q' } });
      await waitFor(async () => (await kid.getState()) === 'completed');
      if (fails) throw new Error('host broke');
      return 'host done';
    },
    { ...env, concurrency: 2 },
  );
  t.after(() => Promise.all([worker.close(), queue.close()]));
  const opts = fails ? { jobId: 'host', removeOnFail: true } : { jobId: 'host', removeOnComplete: true };
  const host = await queue.add('host', {}, opts);
  await waitFor(async () => (await host.getState()) === 'unknown');
  assert.deepEqual(await host.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  const again = await queue.add('again', {}, { jobId: 'host' });
  await waitFor(async () => (await again.getState()) === 'completed');
  assert.deepEqual(await again.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
}

test('a job given a child while it ran, removed as it completes, takes its dependencies along', (t) =>
  giveChildThenFinish(t, false));

test('a job given a child while it ran, removed as it fails, takes its dependencies along', (t) =>
  giveChildThenFinish(t, true));
