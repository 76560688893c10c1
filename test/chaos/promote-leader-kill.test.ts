/**
 * No single process is needed for due jobs: the leader SIGKILLed while a
 * stream of 1-second delayed jobs runs, its session lingering (12 s) so that
 * no other worker is elected meanwhile, the other worker daemon promotes
 * them as a standby. Lateness is measured on the test's clock alone: from
 * the add's call plus its delay to the start of the job's processor (both
 * in this process). Before, promotion waited for the dead leader's session
 * to expire and a new leader to be elected: jobs started up to ~12 s late.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { spawnFixture } from '../helpers/process.js';
import { queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/queue/worker-process.ts', import.meta.url));
const DELAY_MS = 1000;
const JOBS = 40;
const EVERY_MS = 200;
/** The kill comes after this many adds. */
const KILL_AT = 8;
/** Latest start past due allowed: the standby's grace and look, a claim, on a busy machine. */
const LATE_BOUND_MS = 1000;

test('the leader SIGKILLed during a stream of delayed jobs: none starts more than 1 s late', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('promote-kill', env);
  t.after(() => queue.close());
  const daemon = (sessionTimeout: number) => {
    // paused: they claim nothing, so every job runs in this process (and no job of the dead
    // leader waits for its session to expire); they only promote
    const f = spawnFixture(WORKER, [
      JSON.stringify({ ...env.connection, sessionTimeout, prefix: env.prefix, queue: 'promote-kill', paused: true }),
    ]);
    t.after(() => f.child.kill('SIGKILL'));
    return f;
  };
  const leader = daemon(12_000);
  await leader.waitForLine(/^leader$/);
  const standby = daemon(4000);
  await standby.waitForLine(/^ready$/);

  const started = new Map<string, number>();
  const worker = new Worker('promote-kill', async (job) => void started.set(job.id, Date.now()), {
    ...env,
    concurrency: 20,
    housekeeping: false,
  });
  t.after(() => worker.close());
  await worker.waitUntilReady();

  const due = new Map<string, number>();
  for (let i = 0; i < JOBS; i++) {
    if (i === KILL_AT) leader.child.kill('SIGKILL');
    const at = Date.now();
    const job = await queue.add('tick', { i }, { delay: DELAY_MS });
    due.set(job.id, at + DELAY_MS);
    await new Promise((r) => setTimeout(r, EVERY_MS));
  }
  await waitFor(() => started.size === JOBS, { timeoutMs: 60_000, what: 'every delayed job started' });
  const late = [...due].map(([id, at]) => ({ id, late: (started.get(id) as number) - at }));
  const worst = late.reduce((a, b) => (b.late > a.late ? b : a));
  t.diagnostic(`latest start: ${worst.late} ms past due`);
  assert.ok(worst.late <= LATE_BOUND_MS, `job ${worst.id} started ${worst.late} ms past due`);
  // the dead leader's session still held the election: the standby promoted them all
  assert.ok(!standby.lines.includes('leader'), 'no new leader was elected while the jobs were due');
});

test("the leader SIGKILLed: a worker's retries start within 1 s of their backoff", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('retry-kill', env);
  t.after(() => queue.close());
  const leader = spawnFixture(WORKER, [
    JSON.stringify({
      ...env.connection,
      sessionTimeout: 12_000,
      prefix: env.prefix,
      queue: 'retry-kill',
      paused: true,
    }),
  ]);
  t.after(() => leader.child.kill('SIGKILL'));
  await leader.waitForLine(/^leader$/);
  const failedAt = new Map<string, number>();
  const retriedAt = new Map<string, number>();
  // this worker stands in the election behind the leader, whose session outlives the test's window
  const worker = new Worker(
    'retry-kill',
    async (job) => {
      if (job.attemptsMade === 0) {
        failedAt.set(job.id, Date.now());
        throw new Error('first attempt fails');
      }
      retriedAt.set(job.id, Date.now());
    },
    { ...env, concurrency: 10 },
  );
  t.after(() => worker.close());
  await worker.waitUntilReady();
  leader.child.kill('SIGKILL');
  await leader.exited;
  const jobs = [];
  for (let i = 0; i < 10; i++) {
    const opts = { attempts: 2, backoff: { type: 'fixed', delay: DELAY_MS } };
    jobs.push(await queue.add('retry', { i }, opts));
    await new Promise((r) => setTimeout(r, EVERY_MS));
  }
  await waitFor(() => retriedAt.size === jobs.length, { timeoutMs: 60_000, what: 'every job retried' });
  const late = jobs.map((j) => ({
    id: j.id,
    late: (retriedAt.get(j.id) as number) - ((failedAt.get(j.id) as number) + DELAY_MS),
  }));
  const worst = late.reduce((a, b) => (b.late > a.late ? b : a));
  t.diagnostic(`latest retry: ${worst.late} ms past its backoff`);
  assert.ok(worst.late <= LATE_BOUND_MS, `job ${worst.id} retried ${worst.late} ms past its backoff`);
  assert.ok(!worker.isLeader, 'the worker was not elected while the retries were due');
});
