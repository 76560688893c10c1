/**
 * A progress write whose connection is lost again and again before it can
 * learn its outcome has learnt nothing about the lease: the attempt goes
 * on, and the job completes once. It was taken for a lost lease, and the
 * attempt revoked (its processor aborted, the job left to run again after
 * its lease ran out).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { sharedZooKeeper } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { FaultProxy, OP, request } from '../../../helpers/fault-proxy.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

/** More losses in a row than one transaction is sent again after an unknown outcome. */
const LOSSES = 12;

test(`a progress write cut off ${LOSSES} times in a row: the attempt goes on and completes once`, {
  timeout: 60_000,
}, async (t) => {
  const env = await queueEnv(t);
  const proxy = await FaultProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  let cut = false;
  const aborted: string[] = [];
  const progressErrors: unknown[] = [];
  const lost: string[] = [];
  const completed: string[] = [];
  const worker = new Worker(
    'q',
    async (job, _token, signal) => {
      signal?.addEventListener('abort', () => aborted.push(job.id as string));
      await waitFor(() => cut, { what: 'the cuts armed' });
      await job.updateProgress(50).catch((err: unknown) => progressErrors.push(err));
      return 'ok';
    },
    {
      ...env,
      connection: { ...env.connection, connectionString: proxy.connectionString },
      lockDuration: 30_000, // no renewal in the test's time: the cuts meet the progress write alone
      housekeeping: false,
    },
  );
  worker.on('lost', (job) => lost.push(job.id as string));
  worker.on('completed', (job) => completed.push(job.id as string));
  t.after(() => worker.close());
  const job = await queue.add('j', {});
  // the progress write (a multi rewriting the claim with the progress) is cut off before it reaches the server
  const write = request(OP.multi, `/claims/${job.id}`, '"progress":50');
  const faults = Array.from({ length: LOSSES }, () => proxy.cutBefore(write, 0));
  cut = true;
  await waitFor(() => completed.length + lost.length > 0 || aborted.length > 0, {
    what: 'the attempt settled',
    timeoutMs: 45_000,
  });
  assert.ok(faults[0]?.hasFired, 'the progress write was cut off');
  assert.deepEqual(aborted, [], 'the processor was not aborted');
  assert.deepEqual(lost, [], 'the attempt was not lost');
  assert.deepEqual(completed, [job.id]);
  assert.deepEqual(progressErrors, [], 'updateProgress did not throw');
  assert.equal(await queue.getJobState(job.id as string), 'completed');
});
