/**
 * Idle workers (no polling: only watches wake them) must take every job that
 * becomes claimable: a new priority lane, a lifo job, a job added during a
 * pause once resumed, a delayed job once due, and a burst that opens new
 * buckets, with jobs added between two looks.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('idle workers without polling take jobs of a new lane, lifo, after a resume, delayed, and a burst', async (t) => {
  const env = await queueEnv(t, 20_000);
  const queue = new Queue('idle', env);
  t.after(() => queue.close());
  const done = new Set<string>();
  const workers = [0, 1, 2].map(
    (i) =>
      new Worker('idle', async (job) => void done.add(job.id), {
        ...env,
        drainDelay: 600,
        concurrency: 2,
        name: `w${i}`,
      }),
  );
  t.after(() => Promise.all(workers.map((w) => w.close(true))));
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  await sleep(300);
  const want = async (ids: string[], what: string) =>
    waitFor(() => ids.every((id) => done.has(id)), { what, timeoutMs: 60_000 }); // a liveness bound, not a speed one: 2,520 jobs on a busy machine

  const a = await queue.add('a', {}, { priority: 7 });
  await want([a.id], 'a job in a new priority lane');
  const b = await queue.add('b', {}, { lifo: true });
  await want([b.id], 'a lifo job');
  await queue.pause();
  const c = await queue.add('c', {});
  await sleep(300);
  assert.equal(done.has(c.id), false, 'paused');
  await queue.resume();
  await want([c.id], 'a job added during a pause, after the resume');
  const d = await queue.add('d', {}, { delay: 500 });
  await want([d.id], 'a delayed job once due');
  const burst = await queue.addBulk(Array.from({ length: 2500 }, (_, i) => ({ name: 'x', data: { i } })));
  const late: string[] = [];
  for (let i = 0; i < 20; i++) {
    late.push((await queue.add('late', { i }, { priority: i % 3 === 0 ? 0 : i })).id);
    await sleep(10);
  }
  await want([...burst.map((j) => j.id), ...late], 'a burst over new buckets and jobs added between looks');
});
