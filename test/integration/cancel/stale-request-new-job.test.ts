/**
 * A cancel request names its attempt by job id and token, the ready
 * pointer's version. A request can outlive its attempt (a cancel that lands
 * as the job completes: the worker lists it only after the attempt ended,
 * and leaves it to the leader's sweep, up to a minute later). A job of the
 * same custom id added again (after removeOnComplete, or a removal) has a new
 * pointer whose versions start again at 0, so its first attempt has the same
 * token as the first attempt of the job before it. The old request must not
 * cancel it.
 *
 * The race that leaves a request behind depends on timing, so this test
 * writes its result, the request node, the way the race leaves it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, openSession, QueueStore, readCancelRequests, requestCancel, scanHead } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { fencing } from '../../helpers/tokens.js';
import { waitFor } from '../../helpers/zk.js';

test('a request left by an attempt of an earlier job of the same id does not cancel the new job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('c', env);
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'c');

  const tokens: string[] = [];
  const started = new Set<string>();
  const aborted = new Map<string, unknown>();
  const gates = new Map<string, () => void>();
  const worker = new Worker(
    'c',
    async (job, token, signal) => {
      tokens.push(`${job.id}@${fencing(token)}`);
      if (job.data.quick) return 'quick';
      started.add(job.id);
      await new Promise<void>((resolve) => {
        gates.set(job.id, resolve);
        signal?.addEventListener('abort', () => {
          aborted.set(job.id, signal.reason);
          resolve();
        });
      });
      if (signal?.aborted) throw new Error(`cancelled: ${String(signal.reason)}`);
      return 'ran to the end';
    },
    { ...env, name: 'daemon', concurrency: 2 },
  );
  t.after(() => worker.close());

  // the first job of id 'x' runs once and is removed as it completes (its attempt's token: 1)
  const first = await queue.add('x', { quick: true }, { jobId: 'x', removeOnComplete: true });
  await waitFor(async () => (await queue.getJob(first.id)) === undefined, { what: 'the first x to complete' });
  assert.deepEqual(tokens, ['x@1']);
  // a cancel that reached it as it completed: its request stays until the leader's next sweep
  await store.ensureDir(store.layout.cancelsOf('daemon'));
  await session.create(
    store.layout.cancel('daemon', 'x', 1),
    Buffer.from(JSON.stringify({ at: Date.now(), reason: 'meant for the first x' })),
  );

  // a new job of id 'x' starts, at the same token
  await queue.add('x', {}, { jobId: 'x' });
  await waitFor(() => started.has('x'), { what: 'the new x to start' });
  assert.deepEqual(tokens, ['x@1', 'x@1']);
  // a cancel of another job makes the worker act on every request it lists
  const other = await queue.add('other', {});
  await waitFor(() => started.has(other.id), { what: 'the other job to start' });
  assert.equal(await queue.cancelJob(other.id, 'meant for the other job'), true);
  await waitFor(() => aborted.has(other.id), { what: 'the other job to be cancelled' });

  gates.get('x')?.();
  await waitFor(async () => (await queue.getJob('x'))?.finishedOn !== undefined, { what: 'the new x to finish' });
  assert.equal(aborted.get('x'), undefined, 'the new x was cancelled by a request for the job before it');
  assert.equal((await queue.getJob('x'))?.returnvalue, 'ran to the end');
});

test('a cancel of the new job over a request the earlier one left is stored for the new attempt', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('c', env);
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'c');
  await store.init();
  // a request left by an earlier job 'x' (its first attempt's token: 1), then a new job 'x' claimed by 'ghost'
  await store.ensureDir(store.layout.cancelsOf('ghost'));
  await session.create(store.layout.cancel('ghost', 'x', 1), Buffer.from(JSON.stringify({ at: 1, reason: 'old' })));
  await queue.add('x', {}, { jobId: 'x' });
  const candidates = await scanHead(store, { limit: 1, exclude: new Set() });
  const { claimed } = await claimJobs(store, candidates, { workerId: 'ghost', lockDuration: 60_000 });
  assert.equal(claimed[0]?.token, 1, 'the new attempt repeats the earlier token');
  const before = await readCancelRequests(store, 'ghost', [{ id: 'x', token: 1 }]);
  assert.deepEqual(
    [before.requests.length, before.stale.length],
    [0, 1],
    "the request left over is not the new attempt's",
  );

  assert.equal(await requestCancel(store, 'x', 'new'), true);
  const after = await readCancelRequests(store, 'ghost', [{ id: 'x', token: 1 }]);
  assert.deepEqual(
    after.requests.map((r) => r.reason),
    ['new'],
    'the new attempt has its own request',
  );
  assert.equal(after.stale.length, 0);
});
