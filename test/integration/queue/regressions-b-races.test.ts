/**
 * Regressions for races of the queue protocol, each forced at one exact
 * point by a fault injected at a session's request boundary (see
 * helpers/queue-internals-b.ts): an add that meets an existing job while it
 * is being deleted; a claim-less finish followed by another worker's claim;
 * an enqueue chunk re-sent after a connection loss; a leader deposed and
 * re-elected in the middle of a promotion.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import {
  beforeNodeExistsReply,
  deleteClaim,
  deleteElectionNodes,
  electionNodes,
  holdAfterNextCommit,
  loseTransactionsInFlightWithNext,
  watchTransactions,
} from '../../helpers/session-faults.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';
import { prefixSession } from '../../helpers/znodes.js';

/** A promise with its resolve function, to hold a processor mid-job. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

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

test("a claim-less finish (immediate retry) leaves the next owner's claim alone", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stale-claims', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  const job = await queue.add('x', {}, { attempts: 2 }); // no backoff: the retry is waiting at once
  const opts = { ...env, housekeeping: false, lockDuration: 60_000 };
  const firstStarted = gate();
  const firstRelease = gate();
  const a = new Worker(
    'stale-claims',
    async () => {
      firstStarted.open();
      await firstRelease.promise;
      throw new Error('first attempt fails');
    },
    opts,
  );
  t.after(() => a.close());
  await firstStarted.promise;
  await a.pause(true); // A claims nothing more
  const secondStarted = gate();
  const secondRelease = gate();
  let secondRuns = 0;
  const lost: string[] = [];
  let b: Worker | undefined;
  t.after(() => {
    secondRelease.open(); // an assertion failed while B was held
    return b?.close();
  });
  // A's claim vanishes, as with its session's expiry (nobody else runs yet, so the job stays A's). Once
  // A's finish (a retry) commits, B starts and claims the job before A sends anything more.
  await deleteClaim(plain, 'stale-claims', job.id);
  holdAfterNextCommit(await a.client, async () => {
    b = new Worker(
      'stale-claims',
      async () => {
        secondRuns++;
        secondStarted.open();
        await secondRelease.promise;
        return 'second';
      },
      opts,
    );
    b.on('lost', (j) => lost.push(j.id));
    await secondStarted.promise;
  });
  const aReported = nextEvent(a, 'failed');
  firstRelease.open();
  await aReported; // A's finish is written, and whatever A did after it is done
  await secondStarted.promise;
  const active = (await queue.getJobCounts('active')).active;
  assert.equal(active, 1, 'B runs the job, yet its claim is gone');
  assert.equal(await queue.remove(job.id), 0, 'the job B runs must not be removable');
  secondRelease.open();
  await waitFor(async () => (await queue.getJobState(job.id)) === 'completed', { what: 'B completed the job' });
  assert.equal((await queue.getJob(job.id))?.returnvalue, 'second');
  assert.deepEqual(lost, []);
  assert.equal(secondRuns, 1);
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

test('a leader deposed and re-elected in the middle of a promotion runs one promoter', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('re-elected', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  const worker = new Worker('re-elected', async () => 'ok', { ...env, stalledInterval: 60_000 });
  t.after(() => worker.close());
  await worker.pause(true); // promotion only: nothing is claimed
  await waitFor(() => worker.isLeader, { what: 'the worker leads' });
  const count = 2000;
  let deposed: string[] = [];
  // The first promotion commits; before the leader hears so, it is deposed and re-elected.
  const watched = watchTransactions(await worker.client, 're-elected', async () => {
    deposed = await deleteElectionNodes(plain, 're-elected');
    await waitFor(
      async () => worker.isLeader && (await electionNodes(plain, 're-elected')).some((n) => !deposed.includes(n)),
      { what: 're-elected' },
    );
  });
  await queue.addBulk(Array.from({ length: count }, () => ({ name: 'd', data: {}, opts: { delay: 1000 } })));
  await waitFor(async () => (await queue.getJobCounts('delayed')).delayed === 0, {
    timeoutMs: 60_000,
    what: 'every job promoted',
  });
  assert.equal(deposed.length, 1, 'the leader was deposed during the promotion');
  assert.equal((await queue.getJobCounts('waiting')).waiting, count);
  assert.equal(watched.conflicts(), 0, 'promotions that collided with promotions of the same leader');
});
