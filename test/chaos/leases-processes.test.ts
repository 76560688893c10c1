/**
 * Leases across processes: a stopped worker whose job went to
 * another worker, and workers whose clocks disagree with the leader's. The
 * worker under test runs in its own process (SIGSTOP, a skewed Date.now());
 * the leader runs here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '@zkq/producer';
import { Worker, type WorkerOptions } from '@zkq/worker';
import { type Fixture, spawnFixture } from '../helpers/process.js';
import { type QueueTestEnv, queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const LEASE_WORKER = fileURLToPath(new URL('../fixtures/queue/lease-worker.ts', import.meta.url));

function startWorker(t: { after(fn: () => unknown): void }, env: QueueTestEnv, queue: string, extra: object): Fixture {
  const f = spawnFixture(LEASE_WORKER, [JSON.stringify({ ...env.connection, prefix: env.prefix, queue, ...extra })]);
  t.after(() => {
    f.child.kill('SIGCONT');
    f.child.kill('SIGKILL');
  });
  return f;
}

/** The housekeeping leader, here: it revokes stale claims often and counts what it runs itself. */
function leader(
  t: { after(fn: () => unknown): void },
  env: QueueTestEnv,
  queue: string,
  processor: () => Promise<unknown>,
  opts: Partial<WorkerOptions> = {},
) {
  const runs: string[] = [];
  const stalled: string[] = [];
  const completed = new Map<string, unknown>();
  const worker = new Worker(
    queue,
    async (job) => {
      runs.push(job.id);
      return processor();
    },
    { ...env, stalledInterval: 300, lockDuration: 10_000, ...opts },
  );
  worker.on('error', () => undefined);
  worker.on('stalled', (id) => stalled.push(id));
  worker.on('completed', (job, result) => completed.set(job.id, result));
  t.after(() => worker.close(true));
  return { worker, runs, stalled, completed };
}

async function finishedState(queue: Queue, id: string, timeoutMs: number): Promise<string> {
  return waitFor(
    async () => {
      const state = await queue.getJobState(id);
      return state === 'completed' || state === 'failed' ? state : undefined;
    },
    { timeoutMs, what: `job ${id} finished` },
  );
}

// ---- lease renewal is fenced -----------------------------------------------------

test('a stopped worker whose job was claimed again: on waking, its processor is aborted before the new attempt ends', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('unfenced-renewal', env);
  t.after(() => queue.close());
  const job = await queue.add('j', {});
  // Its session outlives the stop: only the lease can free the job.
  const stopped = startWorker(t, env, 'unfenced-renewal', { sessionTimeout: 30_000, lockDuration: 2000 });
  await stopped.waitForLine(new RegExp(`^started ${job.id}$`));
  stopped.child.kill('SIGSTOP');

  let abortedFirst: boolean | undefined;
  let secondStarted!: () => void;
  const second = new Promise<void>((r) => {
    secondStarted = r;
  });
  const other = leader(t, env, 'unfenced-renewal', async () => {
    secondStarted();
    // Holds the job until the stopped worker's processor is aborted (generous deadline).
    await stopped.waitForLine(new RegExp(`^aborted ${job.id}$`), 15_000).catch(() => undefined);
    abortedFirst = stopped.lines.includes(`aborted ${job.id}`);
    return 'second';
  });
  await second; // the leader revoked the stopped worker's claim and claimed the job itself
  stopped.child.kill('SIGCONT');
  await waitFor(() => other.completed.has(job.id), { timeoutMs: 30_000, what: 'the second attempt completed' });
  assert.equal(abortedFirst, true, "the woken worker's processor was aborted before the second attempt finished");
  await stopped.waitForLine(new RegExp(`^lost ${job.id}$`), 15_000);
  assert.ok(!stopped.lines.includes(`completed ${job.id}`));
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.returnvalue, 'second');
  assert.equal(stored?.stalledCounter, 1);
  assert.deepEqual(other.runs, [job.id]);
});

// ---- no two clocks compared ----------------------------------------------------------

test("a renewing worker whose clock is 3 s behind the leader's keeps its job (lockDuration 2 s)", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('clock-behind', env);
  t.after(() => queue.close());
  const job = await queue.add('j', {});
  const behind = startWorker(t, env, 'clock-behind', {
    clockSkewMs: -3000,
    lockDuration: 2000,
    maxStalledCount: 0,
    holdMs: 5000, // two and a half leases, renewed all along
  });
  await behind.waitForLine(new RegExp(`^started ${job.id}$`));
  const keeper = leader(t, env, 'clock-behind', async () => 'by-leader', { maxStalledCount: 0 });
  const state = await finishedState(queue, job.id, 30_000);
  const stored = await queue.getJob(job.id);
  assert.equal(state, 'completed', `the job ${state}: ${stored?.failedReason ?? ''}`);
  assert.equal(stored?.returnvalue, `done-by-${behind.child.pid}`);
  assert.equal(stored?.stalledCounter, 0);
  assert.deepEqual(keeper.stalled, [], 'the leader revoked nothing');
  assert.deepEqual(keeper.runs, []);
  assert.ok(!behind.lines.includes(`aborted ${job.id}`));
});

test("a stopped worker whose clock is ahead of the leader's loses its job once its lease runs out", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('clock-ahead', env);
  t.after(() => queue.close());
  const job = await queue.add('j', {});
  const ahead = startWorker(t, env, 'clock-ahead', {
    clockSkewMs: 60_000,
    sessionTimeout: 40_000, // the session outlives the test: only the lease can free the job
    lockDuration: 2000,
  });
  await ahead.waitForLine(new RegExp(`^started ${job.id}$`));
  ahead.child.kill('SIGSTOP');
  const keeper = leader(t, env, 'clock-ahead', async () => 'recovered');
  // A 2 s lease with the leader checking every 300 ms: 15 s is ample.
  const state = await finishedState(queue, job.id, 15_000);
  assert.equal(state, 'completed');
  const stored = await queue.getJob(job.id);
  assert.equal(stored?.returnvalue, 'recovered');
  assert.equal(stored?.stalledCounter, 1);
  assert.deepEqual(keeper.stalled, [job.id]);
  assert.deepEqual(keeper.runs, [job.id]);
});

// ---- no processor starts on a claim revoked meanwhile ----------------------------------

test('a job claimed before its worker blocked, and completed elsewhere meanwhile, is never started by the blocked worker', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('start-after-revoke', env);
  t.after(() => queue.close());
  const blocker = await queue.add('blocker', {});
  const victim = await queue.add('victim', {});
  // Both are claimed in one transaction; the first one's processor then blocks the event loop
  // for four leases before the second one's processor would start.
  const blocked = startWorker(t, env, 'start-after-revoke', {
    sessionTimeout: 30_000,
    lockDuration: 1000,
    concurrency: 2,
    holdMs: 0,
    blockMs: 4000,
  });
  await blocked.waitForLine(new RegExp(`^started ${blocker.id}$`));
  const other = leader(t, env, 'start-after-revoke', async () => 'elsewhere', {
    lockDuration: 1000,
    stalledInterval: 200,
  });
  await waitFor(() => other.completed.has(victim.id), { timeoutMs: 30_000, what: 'the victim completed elsewhere' });
  await blocked.waitForLine(new RegExp(`^(lost|started) ${victim.id}$`), 30_000);
  assert.ok(!blocked.lines.includes(`started ${victim.id}`), 'the blocked worker started a job completed elsewhere');
  assert.equal((await queue.getJob(victim.id))?.returnvalue, 'elsewhere');
});
