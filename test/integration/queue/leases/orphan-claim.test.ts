/**
 * A claim node that outlives its job. The leader judges a lease by the
 * claim's version, but revokes it through the job's record and pointer: a
 * claim whose record is gone (a release that failed for good, the record
 * removed under it) was never revoked, and stayed until its worker's session
 * ended. Meanwhile a job added again under its id could not be claimed and
 * was reported active. The leader now removes such a claim once it has not
 * moved for its lease, fenced so that a claim made since of the id added
 * again is never the one deleted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore, removeOrphanClaimOps, revokeClaims } from '@zkq/core/internal';
import { FlowProducer, Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

const LEASE = 1000;

/** A claim of job `id` left under a live session of its own, naming a pointer that is gone. */
async function leaveClaim(
  t: Parameters<typeof prefixSession>[0],
  env: Awaited<ReturnType<typeof queueEnv>>,
  q: string,
  id: string,
  /** The pointer the claim names: by default one no job of a fresh queue is given. */
  named = (layout: QueueStore['layout']) => `${layout.lane('p-0000000000')}/b-0/qn-${id}-0000000000`,
) {
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, q);
  await store.init();
  const pointer = named(store.layout);
  const data = { worker: 'w-gone', pointer, lockDuration: LEASE, at: Date.now() };
  await session.create(store.layout.claim(id), Buffer.from(JSON.stringify(data)), 'ephemeral');
  return { session, store, pointer };
}

/**
 * Runs `queue` on a worker whose lease is LEASE and that allows no stall, until job `id` has
 * completed or failed (`what` names it in the wait's error); returns the ids of the jobs it ran, in order.
 */
async function runUntilFinished(
  t: Parameters<typeof prefixSession>[0],
  env: Awaited<ReturnType<typeof queueEnv>>,
  queue: Queue,
  id: string,
  what: string,
): Promise<string[]> {
  const ran: string[] = [];
  const worker = new Worker(queue.name, async (job) => void ran.push(job.id as string), {
    ...env,
    lockDuration: LEASE,
    stalledInterval: 200,
    maxStalledCount: 0,
  });
  t.after(() => worker.close());
  await waitFor(async () => ['completed', 'failed'].includes(await queue.getJobState(id)), {
    what: `${what} finished while the left claim’s session lives`,
  });
  return ran;
}

test('a claim left without its record, the id added again: the leader removes the claim and the job runs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('orphan-again', env);
  t.after(() => queue.close());
  const left = await leaveClaim(t, env, 'orphan-again', 'x');
  await queue.add('j', { v: 2 }, { jobId: 'x' });
  const ran: string[] = [];
  const worker = new Worker('orphan-again', async (job) => void ran.push(job.id as string), {
    ...env,
    lockDuration: LEASE,
    stalledInterval: 200,
  });
  t.after(() => worker.close());
  const stalled: string[] = [];
  worker.on('stalled', (id: string) => stalled.push(id));
  await waitFor(async () => (await queue.getJobState('x')) === 'completed', {
    what: 'the job added again completed while the left claim’s session lives',
  });
  assert.deepEqual(ran, ['x']);
  assert.equal((await queue.getJob('x'))?.stalledCounter, 0, 'the left claim was no attempt of this job');
  assert.deepEqual(stalled, [], 'removing a left claim is no stall');
  assert.ok(left.session.sessionId, 'the session that left the claim is still open');
});

test('a claim left naming the very pointer the id added again is given (its lane made anew): removed, the job runs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('orphan-same-path', env);
  t.after(() => queue.close());
  // its job removed, its priority's lane left empty and removed by a claimer's scan: the id added again at
  // that priority, into the lane made anew, is given the first name of its first bucket, the claim's
  const left = await leaveClaim(
    t,
    env,
    'orphan-same-path',
    'x',
    (l) => `${l.bucket('p-0000000005', 0)}/qn-x-0000000000`,
  );
  await queue.add('j', {}, { jobId: 'x', priority: 5 });
  const lane = left.store.layout.bucket('p-0000000005', 0);
  assert.deepEqual(await left.session.getChildren(lane), ['qn-x-0000000000'], 'the job added again has that name');
  // taken for an attempt of this job, the left claim was revoked as a stall: with none allowed, the job
  // failed without ever running
  const ran = await runUntilFinished(t, env, queue, 'x', 'the job added again');
  assert.equal(await queue.getJobState('x'), 'completed', (await queue.getJob('x'))?.failedReason);
  assert.deepEqual(ran, ['x']);
  assert.equal((await queue.getJob('x'))?.stalledCounter, 0, 'the left claim was no attempt of this job');
});

test('a claim left without its record, the id added again delayed: removed once the job waits, and it runs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('orphan-delayed', env);
  t.after(() => queue.close());
  const left = await leaveClaim(t, env, 'orphan-delayed', 'x');
  await queue.add('j', {}, { jobId: 'x', delay: 1500 });
  const ran = await runUntilFinished(t, env, queue, 'x', 'the job added again delayed');
  assert.equal(await queue.getJobState('x'), 'completed', (await queue.getJob('x'))?.failedReason);
  assert.deepEqual(ran, ['x']);
  assert.ok(left.session.sessionId);
});

test('claims left without their records, the ids added again as a flow’s parent and child: removed, both run', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('orphan-child', env);
  const flows = new FlowProducer(env);
  t.after(() => Promise.all([queue.close(), flows.close()]));
  await leaveClaim(t, env, 'orphan-child', 'x');
  // and one of the parent's id: left while it waits for its child, removed once it waits
  await leaveClaim(t, env, 'orphan-child', 'p');
  await flows.add({
    name: 'parent',
    queueName: 'orphan-child',
    opts: { jobId: 'p' },
    children: [{ name: 'child', queueName: 'orphan-child', opts: { jobId: 'x' } }],
  });
  const ran = await runUntilFinished(t, env, queue, 'p', 'the parent');
  assert.equal(await queue.getJobState('x'), 'completed', (await queue.getJob('x'))?.failedReason);
  assert.equal(await queue.getJobState('p'), 'completed');
  assert.deepEqual(ran, ['x', 'p']);
});

test('a claim left without its record is removed once unmoved for its lease; the id is then free', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('orphan-gone', env);
  t.after(() => queue.close());
  const left = await leaveClaim(t, env, 'orphan-gone', 'x');
  const worker = new Worker('orphan-gone', async () => 'ok', { ...env, lockDuration: LEASE, stalledInterval: 200 });
  t.after(() => worker.close());
  await waitFor(async () => (await left.session.exists(left.store.layout.claim('x'))) === null, {
    what: 'the left claim removed',
  });
  assert.deepEqual(
    (await queue.getActive()).map((j) => j.id),
    [],
  );
  await queue.add('j', {}, { jobId: 'x' });
  await waitFor(async () => (await queue.getJobState('x')) === 'completed', { what: 'the job added again completed' });
});

for (const when of ['before', 'after'] as const) {
  test(`the removal of a left claim judged with the id added again ${when} fails once that job was claimed since`, async (t) => {
    const env = await queueEnv(t);
    const q = `orphan-race-${when}`;
    const queue = new Queue(q, env);
    t.after(() => queue.close());
    const left = await leaveClaim(t, env, q, 'x');
    const store = new QueueStore(await queue.client, q);
    // judged with its record gone (fenced by its absence), or with the id added again (by that job's pointer)
    if (when === 'before') await queue.add('j', {}, { jobId: 'x' });
    const node = await store.session.getData(store.layout.claim('x'));
    const judged = { id: 'x', version: node.stat.version, czxid: node.stat.czxid, pointer: left.pointer };
    const removal = await removeOrphanClaimOps(store, judged);
    assert.ok(removal, 'a left claim: removable');
    // before the removal commits: the left claim's session ends, the id is (added again and) claimed
    await left.session.close();
    if (when === 'after') await queue.add('j', {}, { jobId: 'x' });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let runs = 0;
    const worker = new Worker(
      q,
      async () => {
        runs++;
        await held;
      },
      { ...env, lockDuration: 60_000, housekeeping: false },
    );
    // the processor let go first, whatever the assertions say
    t.after(() => {
      release();
      return worker.close();
    });
    await waitFor(() => runs === 1, { what: 'the job added again claimed' });
    const now = await store.session.getData(store.layout.claim('x'));
    assert.equal(now.stat.version, judged.version, 'the new claim is at the version judged');
    const [result] = await store.executor.run([{ build: () => ({ ops: removal.ops }) }], { receipt: false });
    assert.equal(result?.ok, false, 'the removal judged on the left claim fails');
    assert.ok(await store.session.exists(store.layout.claim('x')), 'the new claim stands');
    // and the leader's own path, judged on the left claim, removes nothing either
    assert.deepEqual(await revokeClaims(store, [judged], () => []), []);
    assert.ok(await store.session.exists(store.layout.claim('x')));
    release();
    await waitFor(async () => (await queue.getJobState('x')) === 'completed', { what: 'the job completed' });
    assert.equal(runs, 1);
  });
}
