/**
 * A worker closed (not forced) while its claim is on the way to ZooKeeper
 * runs the jobs the claim got, as close() promises for jobs in flight: it
 * does not drop them claimed but never started, their claims then vanishing
 * with its session and the next worker counting a stall the job never had.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Op } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a claim in flight when close() is called: its job runs to its end, no stall', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('close-in-flight', env);
  t.after(() => queue.close());
  const started: string[] = [];
  const worker = new Worker(
    'close-in-flight',
    async (job) => {
      started.push(job.id as string);
      return 'ok';
    },
    { ...env, concurrency: 1, housekeeping: false },
  );
  t.after(() => worker.close());
  const session = await worker.client;
  let closed: Promise<void> | undefined;
  const multi = session.multi.bind(session);
  session.multi = ((ops: readonly Op[]) => {
    const claim = ops.some((op) => op.op === 'create' && op.path.includes('/claims/'));
    if (claim && !closed) closed = worker.close(); // the close comes as the claim goes out
    return multi(ops);
  }) as typeof session.multi;

  const job = await queue.add('j', {});
  await waitFor(() => closed !== undefined, { what: 'the claim sent' });
  await closed;
  const state = await queue.getJobState(job.id as string);
  assert.deepEqual(started, [job.id], 'the job claimed was run');
  assert.equal(state, 'completed');
});
