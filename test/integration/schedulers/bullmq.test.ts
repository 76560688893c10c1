/**
 * BullMQ's job schedulers on ZooKeeper: iterations run once per tick, an
 * upsert replaces the pending iteration, removal stops them, and many
 * producers upserting at once still add one job per tick.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

async function connectionFor(t: { name?: string }) {
  const env = await queueEnv(t);
  return { ...env.connection, namespace: env.prefix };
}

/** The tick times of iteration ids `repeat:<id>:<millis>`, checked to be distinct and a whole number of ticks apart. */
function ticksOf(ids: string[], every: number): number[] {
  const millis = ids.map((id) => Number(id.split(':').pop()));
  assert.equal(new Set(millis).size, millis.length, `one job per tick: ${ids.join(', ')}`);
  const sorted = [...millis].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) {
    const gap = (sorted[i] as number) - (sorted[i - 1] as number);
    assert.equal(gap % every, 0, `ticks ${sorted[i - 1]} and ${sorted[i]} are whole intervals apart`);
  }
  return sorted;
}

test('an every-scheduler runs one job per tick, upsert keeps one pending iteration, remove stops it', async (t) => {
  const connection = await connectionFor(t);
  const queue = new Queue('sched', { connection });
  t.after(() => queue.close());
  const seen: string[] = [];
  const worker = new Worker('sched', async (job) => void seen.push(job.id as string), { connection });
  t.after(() => worker.close());

  await queue.upsertJobScheduler('tick', { every: 200 }, { name: 'tick', data: { v: 1 } });
  await queue.upsertJobScheduler('tick', { every: 200 }, { name: 'tick', data: { v: 2 } });
  await waitFor(async () => seen.length >= 5, { timeoutMs: 20_000, what: 'five iterations' });
  const schedulers = await queue.getJobSchedulers();
  assert.equal(schedulers.length, 1);
  assert.equal(schedulers[0]?.key, 'tick');
  assert.equal(schedulers[0]?.every, 200);
  assert.deepEqual(schedulers[0]?.template?.data, { v: 2 });
  assert.equal(await queue.getJobSchedulersCount(), 1);

  assert.equal(await queue.removeJobScheduler('tick'), true);
  assert.equal(await queue.removeJobScheduler('tick'), false);
  const settled = seen.length;
  await new Promise((r) => setTimeout(r, 800));
  assert.ok(seen.length <= settled + 1, 'at most the iteration already running finishes after removal');
  ticksOf(seen, 200);
  assert.equal(await queue.getJobScheduler('tick'), undefined);
});

test('five producers upserting one scheduler while three workers run it: one job per tick', async (t) => {
  const connection = await connectionFor(t);
  const producers = Array.from({ length: 5 }, () => new Queue('race', { connection }));
  t.after(() => Promise.all(producers.map((q) => q.close())));
  const runs = new Map<string, number>();
  const workers = Array.from(
    { length: 3 },
    () =>
      new Worker('race', async (job) => void runs.set(job.id as string, (runs.get(job.id as string) ?? 0) + 1), {
        connection,
        concurrency: 2,
      }),
  );
  t.after(() => Promise.all(workers.map((w) => w.close())));
  for (let round = 0; round < 4; round++) {
    await Promise.all(producers.map((q) => q.upsertJobScheduler('race', { every: 150 }, { name: 'tick' })));
  }
  await waitFor(async () => runs.size >= 8, { timeoutMs: 30_000, what: 'eight iterations' });
  for (const [id, n] of runs) assert.equal(n, 1, `${id} ran once`);
  ticksOf([...runs.keys()], 150);
  const pending = await producers[0]?.getDelayed();
  assert.ok((pending?.length ?? 0) <= 1, 'at most one pending iteration');
});

test("a scheduler's pending iteration cannot be removed alone; removing the scheduler removes it", async (t) => {
  const connection = await connectionFor(t);
  const queue = new Queue('pending', { connection });
  t.after(() => queue.close());
  await queue.upsertJobScheduler('later', { every: 60_000, startDate: Date.now() + 60_000 }, { name: 'tick' });
  const [pending] = await queue.getDelayed();
  assert.match(pending?.id ?? '', /^repeat:later:\d+$/);
  await assert.rejects(() => (pending as NonNullable<typeof pending>).remove(), /belongs to a job scheduler/);
  assert.equal(await queue.removeJobScheduler('later'), true);
  assert.deepEqual(await queue.getDelayed(), []);
});
