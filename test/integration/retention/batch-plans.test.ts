/**
 * Retention inside the finish plans the finishes of one batch from one count:
 * each plan counts the adds of those before it, and only the first of the
 * batch at the bound carries the check of the finished set's version (the
 * others trim as many as they add, trusting it). Three ways a plan outlives
 * what it was made from:
 *
 * - the finish that carried the check fails for good (its job was revoked):
 *   the others are sent again as built, with no check, and a count gone
 *   stale meanwhile (a job removed by hand) is not noticed;
 * - a finish that grew the set fails for good: the next one, planned from a
 *   count that held that add, trims a job although the set is under its bound;
 * - the batch is split over two multis (large results): the second has no
 *   check, and a removal between the two is not noticed.
 *
 * Each time a job the bound keeps is trimmed: fewer than the count are kept.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LostJobError, type Session } from '@zkq/core';
import {
  type ClaimedJob,
  claimJobs,
  finishJobs,
  lookAtHead,
  prepareTrims,
  QueueStore,
  revokeClaims,
} from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

const keep = { count: 5 };
const claimOptions = { workerId: 'a', lockDuration: 600_000 };

async function claimAll(store: QueueStore, n: number): Promise<ClaimedJob[]> {
  const { candidates } = await lookAtHead(store, { limit: 100, exclude: [] });
  assert.equal(candidates.length, n);
  const { claimed } = await claimJobs(store, candidates, claimOptions);
  assert.equal(claimed.length, n);
  return claimed;
}

const completion = (job: ClaimedJob, returnvalue: unknown = 'ok') => ({
  job,
  outcome: { kind: 'completed' as const, returnvalue, remove: false },
  keep,
});

/** A store on its own session, and a queue to add and look with. */
async function setup(t: { name?: string; after(fn: () => unknown): void }) {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const store = new QueueStore((await prefixSession(t, env)) as Session, 'q');
  await store.init();
  return { queue, store };
}

/** Adds `n` jobs and completes them through `store` (its view then knows the set). */
async function completeSome(queue: Queue, store: QueueStore, n: number) {
  const jobs = await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'j', data: i })));
  const done = await finishJobs(
    store,
    (await claimAll(store, n)).map((j) => completion(j)),
  );
  assert.ok(done.every((r) => r.ok));
  assert.equal((await queue.getJobCounts('completed')).completed, n);
  return jobs;
}

/** Claims two new jobs x and y; the leader revokes x's claim (a hung worker), so that x's finish fails for good. */
async function twoWithXRevoked(queue: Queue, store: QueueStore) {
  const [x, y] = await queue.addBulk([
    { name: 'j', data: 'x' },
    { name: 'j', data: 'y' },
  ]);
  const claimed = await claimAll(store, 2);
  const jx = claimed.find((c) => c.record.id === x?.id) as ClaimedJob;
  const jy = claimed.find((c) => c.record.id === y?.id) as ClaimedJob;
  const claim = await store.session.getData(store.layout.claim(jx.record.id));
  const revoked = await revokeClaims(
    store,
    [{ id: jx.record.id, version: claim.stat.version, pointer: jx.pointer }],
    () => [],
  );
  assert.deepEqual(revoked, [jx.record.id]);
  return { jx, jy };
}

test('removeOnComplete count: a batch whose checking finish fails still keeps every job under the bound', async (t) => {
  const { queue, store } = await setup(t);
  const first = await completeSome(queue, store, 5);
  // the view is read now (count 5); then a job leaves the set by hand: 4 left
  await prepareTrims(store);
  await queue.remove(first[4]?.id as string);
  const { jx, jy } = await twoWithXRevoked(queue, store);

  const results = await finishJobs(store, [completion(jx), completion(jy)]);
  assert.ok(!results[0]?.ok && results[0]?.error instanceof LostJobError, 'the revoked finish is rejected');
  assert.ok(results[1]?.ok, 'the other finish commits');
  // 4 left + y = 5: nothing to trim
  assert.equal((await queue.getJobCounts('completed')).completed, 5, 'as many completed jobs as the count');
  assert.ok(await queue.getJob(first[0]?.id as string), 'the oldest job under the bound is kept');
});

test('removeOnComplete count: a batch whose growing finish fails still keeps every job under the bound', async (t) => {
  const { queue, store } = await setup(t);
  const first = await completeSome(queue, store, 4);
  await prepareTrims(store);
  const { jx, jy } = await twoWithXRevoked(queue, store);

  // x's plan grows the set to 5; y's, counting it, trims the oldest
  const results = await finishJobs(store, [completion(jx), completion(jy)]);
  assert.ok(!results[0]?.ok && results[0]?.error instanceof LostJobError, 'the revoked finish is rejected');
  assert.ok(results[1]?.ok, 'the other finish commits');
  // 4 + y = 5: nothing to trim
  assert.equal((await queue.getJobCounts('completed')).completed, 5, 'as many completed jobs as the count');
  assert.ok(await queue.getJob(first[0]?.id as string), 'the oldest job under the bound is kept');
});

test('removeOnComplete count: a batch split over two multis notices a removal between them', async (t) => {
  const { queue, store } = await setup(t);
  const first = await completeSome(queue, store, 5);
  await prepareTrims(store);
  const [x, y] = await queue.addBulk([
    { name: 'j', data: 'x' },
    { name: 'j', data: 'y' },
  ]);
  const claimed = await claimAll(store, 2);
  // a job leaves the set by hand right after the first multi of the batch commits
  const multi = store.session.multi.bind(store.session);
  let removed = false;
  store.session.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const written = await multi(ops);
    if (!removed && ops.some((op) => op.path === store.layout.completedDir)) {
      removed = true;
      await queue.remove(first[4]?.id as string);
    }
    return written;
  }) as typeof store.session.multi;

  // two results too large to share a transaction
  const big = 'r'.repeat(520_000);
  const order = [x?.id, y?.id].map((id) => claimed.find((c) => c.record.id === id) as ClaimedJob);
  const results = await finishJobs(
    store,
    order.map((j) => completion(j, big)),
  );
  assert.ok(removed, 'the removal came between the two multis');
  assert.ok(results.every((r) => r.ok));
  // 5 - first[0] (x's trim) - first[4] (removed) + x + y = 5: y trims nothing
  assert.equal((await queue.getJobCounts('completed')).completed, 5, 'as many completed jobs as the count');
  assert.ok(await queue.getJob(first[1]?.id as string), 'the oldest job under the bound is kept');
});
