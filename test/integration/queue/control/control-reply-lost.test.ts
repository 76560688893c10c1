/**
 * Queue control whose transaction's reply was lost after the server applied
 * it: read back by its receipt, it answers what it did, and it is not
 * planned again. Planned again from fresh reads, a removal found its job
 * gone (answered false) or removed the job added again under its id
 * meanwhile; a retry or a promotion found its job already moved and threw
 * JobStateError; a clean left the jobs it removed out of its answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clean, promoteJob, removeJob, retryJob } from '@zkq/core/internal';
import { Worker } from '@zkq/worker';
import { OP, request } from '../../../helpers/fault-proxy.js';
import { within } from '../../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../../helpers/reply-lost.js';
import { waitFor } from '../../../helpers/zk.js';

test('a removal whose reply was lost answers true and leaves the job added again under its id', async (t) => {
  const { proxy, mine, queue } = await storeAcrossProxy(t, 'remove-reply-lost');
  await queue.add('j', { v: 1 }, { jobId: 'victim-1', delay: 60_000 });
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, 'victim-1'), released);
  const removal = removeJob(mine, 'victim-1');
  await within(lost.fired, 'the removal sent, its reply lost');
  // while this client is cut off, the id is added again
  await queue.add('j', { v: 2 }, { jobId: 'victim-1', delay: 60_000 });
  reconnect();
  assert.equal(await within(removal, 'the removal settled'), true, 'the job was removed');
  const again = await queue.getJob('victim-1');
  assert.deepEqual(again?.data, { v: 2 }, 'the job added again is there');
});

test('a retry whose reply was lost resolves: the job waits', async (t) => {
  const { proxy, mine, queue, env, defer } = await storeAcrossProxy(t, 'retry-reply-lost');
  const worker = new Worker(
    'retry-reply-lost',
    async () => {
      throw new Error('no');
    },
    env,
  );
  worker.on('error', () => undefined);
  defer(() => worker.close());
  const job = await queue.add('j', {}, { jobId: 'again-1' });
  await waitFor(async () => (await queue.getJobState(job.id)) === 'failed', { what: 'the job failed' });
  await worker.pause(true);
  const lost = proxy.loseReply(request(OP.multi, 'again-1'));
  await within(retryJob(mine, 'again-1'), 'the retry settled');
  assert.ok(lost.hasFired, "the retry's reply was lost");
  assert.equal(await queue.getJobState(job.id), 'waiting');
});

test('a promotion whose reply was lost resolves: the job waits', async (t) => {
  const { proxy, mine, queue } = await storeAcrossProxy(t, 'promote-reply-lost');
  const job = await queue.add('j', {}, { jobId: 'soon-1', delay: 60_000 });
  const lost = proxy.loseReply(request(OP.multi, 'soon-1'));
  await within(promoteJob(mine, 'soon-1'), 'the promotion settled');
  assert.ok(lost.hasFired, "the promotion's reply was lost");
  assert.equal(await queue.getJobState(job.id), 'waiting');
});

test('a clean whose reply was lost answers every job it removed', async (t) => {
  const { proxy, mine, queue } = await storeAcrossProxy(t, 'clean-reply-lost');
  const ids = ['old-1', 'old-2', 'old-3'];
  for (const jobId of ids) await queue.add('j', {}, { jobId, delay: 60_000 });
  const lost = proxy.loseReply(request(OP.multi, 'old-2'));
  const cleaned = await within(clean(mine, 0, 0, 'delayed'), 'the clean settled');
  assert.ok(lost.hasFired, "the clean's reply was lost");
  assert.deepEqual([...cleaned].sort(), ids);
  assert.equal(await queue.getDelayedCount(), 0);
});
