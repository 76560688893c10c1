/**
 * Schedulers heal: a scheduler left without its next iteration (the advance
 * after its iteration's claim failed, or the iteration was removed) gets it
 * back from whoever promotes, and only once, however many heal at once.
 * Before, a scheduler whose advance failed once never ticked again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import type { Session } from '@zkq/core';
import { healSchedulers, iterationId, openSession, QueueStore, readScheduler } from '@zkq/core/internal';
import { Queue as ZkqQueue } from '@zkq/producer';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

/** The next transaction of `session` that rewrites scheduler `id` fails with an error that is no race. */
function failNextAdvance(session: Session, queue: string, id: string): { failed: () => boolean } {
  const original = session.multi.bind(session);
  let failed = false;
  session.multi = async (ops) => {
    const advance = ops.some((op) => op.op === 'setData' && op.path.endsWith(`/${queue}/schedulers/s-${id}`));
    if (advance && !failed) {
      failed = true;
      throw new Error('injected: the advance fails');
    }
    return original(ops);
  };
  return { failed: () => failed };
}

test("a scheduler whose advance failed once on zkq's Worker ticks again", async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const ran: string[] = [];
  const errors: string[] = [];
  const worker = new ZkqWorker('heal', async (job) => void ran.push(job.id), { ...env, drainDelay: 1 });
  worker.on('error', (err) => errors.push(err.message));
  t.after(() => worker.close());
  const fault = failNextAdvance(await worker.client, 'heal', 'tick');
  const queue = new Queue('heal', { connection });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('tick', { every: 300 }, { name: 'tick' });
  await waitFor(() => fault.failed(), { timeoutMs: 15_000, what: 'the first advance failed' });
  await waitFor(() => errors.some((m) => m.startsWith('injected')), { what: 'the failure reported' });
  const before = ran.length;
  await waitFor(() => ran.length >= before + 3, { timeoutMs: 20_000, what: 'three more iterations' });
  assert.equal(new Set(ran).size, ran.length, `each tick ran once: ${ran.join(', ')}`);
});

test("a scheduler left without its next iteration gets it back from BullMQ's Worker on the ZooKeeper backend", async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('heal-bull', { connection });
  t.after(() => queue.close());
  // a long interval: only a heal adds the next iteration within the test
  await queue.upsertJobScheduler('tick', { every: 60_000 }, { name: 'tick' });
  const first = (await queue.getJobScheduler('tick'))?.next as number;
  const firstId = iterationId('tick', first);
  // the iteration removed by hand (zkq's Queue allows it): the scheduler has nothing left to run
  const zkq = new ZkqQueue('heal-bull', env);
  t.after(() => zkq.close());
  assert.equal(await zkq.remove(firstId), 1);
  const ran: string[] = [];
  const worker = new Worker('heal-bull', async (job) => void ran.push(job.id as string), { connection });
  t.after(() => worker.close());
  await waitFor(async () => ((await queue.getJobScheduler('tick'))?.next as number) > first, {
    timeoutMs: 20_000,
    what: 'the scheduler advanced',
  });
  const next = (await queue.getJobScheduler('tick'))?.next as number;
  const job = await queue.getJob(iterationId('tick', next));
  assert.equal(await job?.getState(), 'delayed', 'its next iteration waits for its time');
});

test('two workers healing at once: each scheduler gets one next iteration', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('heal-race', { connection });
  t.after(() => queue.close());
  const zkq = new ZkqQueue('heal-race', env);
  t.after(() => zkq.close());
  const ids = Array.from({ length: 20 }, (_, i) => `s${i}`);
  for (const id of ids) await queue.upsertJobScheduler(id, { every: 60_000 }, { name: id });
  // every scheduler's first iteration removed: each is left without its next one
  for (const id of ids) {
    const s = await queue.getJobScheduler(id);
    assert.equal(await zkq.remove(iterationId(id, s?.next as number)), 1);
  }
  const stores = await Promise.all(
    [0, 1].map(async () => {
      const session = await openSession(env.connection, env.prefix);
      t.after(() => session.close());
      const store = new QueueStore(session, 'heal-race');
      await store.init();
      return store;
    }),
  );
  const [a, b] = stores as [QueueStore, QueueStore];
  const now = await a.clock.now();
  const healed = (await Promise.all([healSchedulers(a, now), healSchedulers(b, now)])).flatMap((h) => h.added);
  assert.equal(healed.length, ids.length, `one iteration per scheduler: ${healed.join(', ')}`);
  for (const id of ids) {
    const s = (await readScheduler(a, id))?.record;
    assert.equal(s?.ic, 2, `scheduler ${id} advanced once`);
    const its = (await queue.getJobs(['delayed', 'waiting'])).filter((j) => j.id?.startsWith(`repeat:${id}:`));
    assert.deepEqual(
      its.map((j) => j.id),
      [iterationId(id, s?.next as number)],
      `scheduler ${id} has one next iteration`,
    );
  }
  // healed schedulers have their next iteration: a heal now adds nothing
  assert.deepEqual((await healSchedulers(a, await a.clock.now())).added, []);
});
