/**
 * A scheduler whose iteration is running, claimed by a worker that did not
 * advance it (its advance failed for good, or it died before advancing, its
 * session not expired yet), is healed once the claim is CLAIMER_ADVANCES_MS
 * (5 s) old, and not before. A claim writes no record: the check read the
 * record alone, which says waiting and not started for as long as the
 * iteration runs, so such a scheduler was never healed while its iteration
 * was claimed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import type { Session } from '@zkq/core';
import { healSchedulers, iterationId, openSession, QueueStore, readScheduler } from '@zkq/core/internal';
import { Worker as ZkqWorker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

/** Every transaction of `session` that rewrites scheduler `id` fails with an error that is no race. */
function failAdvances(session: Session, queue: string, id: string): { failed: () => number } {
  const original = session.multi.bind(session);
  let failed = 0;
  session.multi = async (ops) => {
    if (ops.some((op) => op.op === 'setData' && op.path.endsWith(`/${queue}/schedulers/s-${id}`))) {
      failed++;
      throw new Error('injected: the advance fails');
    }
    return original(ops);
  };
  return { failed: () => failed };
}

/**
 * Scheduler `tick` of queue `q`, every `every` ms, its first iteration running on a worker whose
 * advances of it all fail (no housekeeping: only the test's own checks heal): the store, that
 * iteration's time and its claim node's stat.
 */
async function runningUnadvanced(t: { name?: string; after(fn: () => unknown): void }, q: string, every: number) {
  const env = await queueEnv(t);
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, q);
  let release: () => void = () => undefined;
  const running = new Promise<void>((resolve) => {
    release = resolve;
  });
  const started: string[] = [];
  const worker = new ZkqWorker(
    q,
    async (job) => {
      started.push(job.id as string);
      await running;
    },
    { ...env, housekeeping: false, drainDelay: 1 },
  );
  worker.on('error', () => undefined); // the injected failures
  t.after(async () => {
    release();
    await worker.close();
  });
  const fault = failAdvances(await worker.client, q, 'tick');
  const queue = new Queue(q, { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('tick', { every }, { name: 'tick' });
  const first = (await readScheduler(store, 'tick'))?.record.next as number;
  const firstId = iterationId('tick', first);
  await waitFor(() => started.includes(firstId) && fault.failed() > 0, {
    timeoutMs: 15_000,
    what: 'the first iteration runs, its advance failed',
  });
  const claim = await session.exists(store.layout.claim(firstId));
  assert.ok(claim, 'the running iteration is claimed');
  return { store, first, claim };
}

test('a scheduler whose running iteration was not advanced by its claimer is healed 5 s after the claim', async (t) => {
  // a long interval: only a heal adds the next iteration within the test
  const { store, first, claim } = await runningUnadvanced(t, 'heal-running', 60_000);
  // ZooKeeper's time given to the checks: no waiting on the wall clock
  const young = await healSchedulers(store, claim.ctime + 1000);
  assert.deepEqual(young.added, [], 'a claim 1 s old is left to its claimer');
  assert.equal((await readScheduler(store, 'tick'))?.record.next, first);
  const old = await healSchedulers(store, claim.ctime + 6000);
  const next = (await readScheduler(store, 'tick'))?.record.next as number;
  assert.deepEqual(old.added, [iterationId('tick', next)], 'a claim 6 s old: the scheduler is healed');
  assert.equal(next, first + 60_000);
});

test('a heal long after the claim adds the first tick after the heal, none already past', async (t) => {
  const { store, first, claim } = await runningUnadvanced(t, 'heal-late', 1000);
  const healedAt = claim.ctime + 6000;
  const healed = await healSchedulers(store, healedAt);
  const next = (await readScheduler(store, 'tick'))?.record.next as number;
  assert.deepEqual(healed.added, [iterationId('tick', next)], 'the scheduler is healed');
  assert.ok(next > healedAt, `the next tick is ${healedAt - next} ms before the heal`);
  assert.equal((next - first) % 1000, 0, 'the next tick keeps to the schedule');
});
