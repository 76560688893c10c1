import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LostJobError } from '@zkq/core';
import { QueueStore, revokeClaims } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { expire, nextEvent, waitFor } from '../../../helpers/zk.js';

/** A promise with its resolve function, to hold a processor mid-job. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

test('a claim revoked while the processor runs: the late result is rejected, one completion recorded', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('fence', env);
  t.after(() => queue.close());
  const job = await queue.add('x', { v: 1 }, { attempts: 1 });
  const started = gate();
  const release = gate();
  const hung = new Worker(
    'fence',
    async () => {
      started.open();
      await release.promise;
      return 'late';
    },
    { ...env, lockDuration: 60_000 },
  );
  t.after(() => hung.close());
  await started.promise;
  // The leader's revocation of a hung worker, done by hand.
  const store = new QueueStore(await queue.client, 'fence');
  const claim = await store.session.getData(store.layout.claim(job.id as string));
  const { pointer } = JSON.parse(claim.data.toString()) as { pointer: string };
  const stale = [{ id: job.id as string, version: claim.stat.version, pointer }];
  assert.deepEqual(await revokeClaims(store, stale, () => []), [job.id]);
  const completed: unknown[] = [];
  const other = new Worker('fence', async () => 'second', env);
  t.after(() => other.close());
  other.on('completed', (_j, result) => completed.push(result));
  hung.on('completed', (_j, result) => completed.push(result));
  await waitFor(() => completed.includes('second'), { what: 'second attempt completed' });
  const lost = nextEvent<[unknown, Error]>(hung, 'lost');
  release.open();
  const [, err] = await lost;
  assert.ok(err instanceof LostJobError);
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.returnvalue, 'second');
  assert.equal(stored?.stalledCounter, 1);
  assert.deepEqual(completed, ['second']);
  assert.equal((await queue.getJobCounts('completed')).completed, 1);
});

test('session expiry mid-job: the job still completes exactly once', async (t) => {
  const env = await queueEnv(t, 2000);
  const queue = new Queue('expiry', env);
  t.after(() => queue.close());
  const job = await queue.add('x', {});
  const started = gate();
  const release = gate();
  let runs = 0;
  const worker = new Worker(
    'expiry',
    async () => {
      runs++;
      started.open();
      await release.promise;
      return runs;
    },
    { ...env, lockDuration: 60_000 },
  );
  t.after(() => worker.close());
  const completed: unknown[] = [];
  worker.on('completed', (_j, r) => completed.push(r));
  await started.promise;
  const session = await worker.client;
  const renewed = nextEvent(session, 'reconnected');
  await expire(session);
  await renewed; // a new session is up
  release.open();
  await waitFor(() => completed.length === 1, { what: 'completion' });
  assert.equal(runs, 1, 'the attempt was not run twice');
  assert.equal(await (await queue.getJob(job.id))?.getState(), 'completed');
  assert.equal((await queue.getJobCounts('completed')).completed, 1);
});
