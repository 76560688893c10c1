/**
 * Idle workers wait in line: a new job wakes the first of them, not all; and
 * the first in line still sees waiting jobs behind running ones (whose
 * pointers stay at the head of the queue while they run).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

/** No idle poll during the test: only watches may wake a worker. */
const QUIET = { drainDelay: 600, housekeeping: false } as const;

test('the first idle worker takes jobs waiting behind another worker’s running ones', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('behind-running', env);
  t.after(() => queue.close());
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  t.after(() => release());
  const started = new Map<string, number>();
  const workers = ['a', 'b'].map((name) => {
    const w = new Worker(
      'behind-running',
      async () => {
        started.set(name, (started.get(name) ?? 0) + 1);
        await held;
      },
      { ...env, ...QUIET, name, concurrency: 2 },
    );
    t.after(() => w.close(true));
    return w;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'j', data: i })));
  // Whoever is woken first fills its two slots; the other must then see the jobs behind those two.
  await waitFor(() => started.get('a') === 2 && started.get('b') === 2, {
    what: 'both workers running two jobs each',
  });
  release();
});

test('a job added to a queue with ten idle workers wakes only the first few of them', async (t) => {
  // A quiet session probes its server every third of its session timeout: a long one keeps
  // those probes out of the counts below, however slow the machine.
  const env = await queueEnv(t, 30_000);
  const queue = new Queue('no-herd', env);
  t.after(() => queue.close());
  const done: string[] = [];
  const workers = Array.from({ length: 10 }, (_, i) => {
    const w = new Worker('no-herd', async (job) => job.id, { ...env, ...QUIET, name: `w${i}` });
    w.on('completed', (job) => done.push(job.id));
    t.after(() => w.close());
    return w;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const first = await queue.add('warm', {});
  await waitFor(() => done.includes(first.id), { what: 'the first job' });
  await sleep(500); // the line settles
  const sessions = await Promise.all(workers.map((w) => w.client));
  const before = sessions.map((s) => s.stats.requests);
  const job = await queue.add('one', {});
  await waitFor(() => done.includes(job.id), { what: 'the job' });
  await sleep(500);
  const busy = sessions.filter((s, i) => s.stats.requests > (before[i] as number)).length;
  // The first in line claims it and leaves, the next one takes over the head, the first re-joins:
  // a few workers act; the other idle ones are not woken at all.
  assert.ok(busy <= 4, `${busy} of 10 idle workers were woken by one job`);
});

test('a job added to idle workers costs them a bounded number of requests: a freed slot ends no idle wait', async (t) => {
  const env = await queueEnv(t, 30_000); // no probes in the counts (see above)
  const queue = new Queue('per-job', env);
  t.after(() => queue.close());
  const done: string[] = [];
  const workers = Array.from({ length: 3 }, (_, i) => {
    const w = new Worker('per-job', async (job) => job.id, { ...env, ...QUIET, name: `w${i}`, concurrency: 4 });
    w.on('completed', (job) => done.push(job.id));
    t.after(() => w.close());
    return w;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const sessions = await Promise.all(workers.map((w) => w.client));
  /** Adds `n` jobs one at a time, each once the one before has completed and the line has settled. */
  const trickle = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const job = await queue.add('j', i, { removeOnComplete: true });
      await waitFor(() => done.includes(job.id), { what: `job ${job.id}` });
      await sleep(100);
    }
  };
  await trickle(6); // every worker has had a job: their cancel watches and caches are warm
  const before = sessions.reduce((n, s) => n + s.stats.requests, 0);
  const jobs = 6;
  await trickle(jobs);
  const perJob = (sessions.reduce((n, s) => n + s.stats.requests, 0) - before) / jobs;
  // a wake-up, a look, the claim, the finish, leaving and joining the line, and the next one taking
  // over the head: about 12. Ending an idle wait as a slot frees cost 4 to 6 more (a look at the head
  // and a listing of the line, twice).
  assert.ok(perJob <= 13, `${perJob.toFixed(1)} requests per job`);
});
