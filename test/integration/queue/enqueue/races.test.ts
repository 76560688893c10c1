/**
 * Races of an add, each forced at one exact point by a fault injected at a
 * session's request boundary (helpers/session-faults.ts): an add that meets
 * an existing job while it is being deleted; an enqueue chunk re-sent after
 * a connection loss.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { beforeNodeExistsReply, loseTransactionsInFlightWithNext } from '../../../helpers/session-faults.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';

test('add() with an existing jobId whose job is deleted meanwhile never returns an unsaved job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('dedup-race', env);
  t.after(() => queue.close());
  const other = new Queue('dedup-race', env);
  t.after(() => other.close());
  const worker = new Worker('dedup-race', async () => 'first', { ...env, housekeeping: false });
  const done = nextEvent(worker, 'completed');
  await queue.add('order', { v: 1 }, { jobId: 'order-42', removeOnComplete: false });
  await done;
  await worker.close();
  // The existing job goes (as retention would delete it) between the refused create and whatever comes next.
  beforeNodeExistsReply(await queue.client, () => other.remove('order-42'));
  const outcome = await queue.add('order', { v: 2 }, { jobId: 'order-42' }).then(
    (job) => ({ job }),
    (error: unknown) => ({ error }),
  );
  if ('error' in outcome) {
    assert.equal(
      typeof (outcome.error as { code?: unknown }).code,
      'string',
      `a typed error: ${String(outcome.error)}`,
    );
    return;
  }
  const stored = await queue.getJob('order-42');
  assert.ok(stored, `add() resolved with job order-42 ${JSON.stringify(outcome.job.data)}, which is not stored`);
  assert.deepEqual(stored.data, outcome.job.data);
});

test('addBulk: a chunk re-sent after a connection loss keeps FIFO against later chunks', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('resent-chunk', env);
  t.after(() => queue.close());
  // 100 KB each: a few jobs per transaction, many transactions pipelined.
  const count = 100;
  const pad = 'x'.repeat(100_000);
  const lossy = loseTransactionsInFlightWithNext(await queue.client);
  await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 'j', data: { i, pad } })));
  t.diagnostic(`transactions lost in flight: ${lossy.lost()}`);
  const order: number[] = [];
  const worker = new Worker(
    'resent-chunk',
    async (job) => {
      order.push(job.data.i);
    },
    { ...env, housekeeping: false },
  );
  t.after(() => worker.close());
  await waitFor(() => order.length >= count, { timeoutMs: 60_000, what: 'every job run' });
  const late = order.findIndex((v, i) => i > 0 && v < (order[i - 1] as number));
  assert.equal(late, -1, `job ${order[late]} ran after job ${order[late - 1]}: ${order.join(',')}`);
  assert.deepEqual(
    order,
    Array.from({ length: count }, (_, i) => i),
  );
});
