/**
 * `connection.clock: 'process'`: a test that fakes Date and the global timers
 * (node:test's mock timers here, sinon in BullMQ's own suite) moves scheduler
 * ticks and delayed jobs; the session keeps working on the real timers, and
 * a worker's own bookkeeping is on the monotonic clock, which they leave
 * alone. The default stays on ZooKeeper's clock, which faked timers do not move.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { InvalidArgumentError } from '@zkq/core';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

const HOUR = 3_600_000;
/** A time the process clock is set to, a year past ZooKeeper's. */
const FAKE_NOW = Date.now() + 365 * 24 * HOUR;

async function connectionFor(t: { name?: string }, clock?: 'process') {
  const env = await queueEnv(t);
  return { ...env.connection, namespace: env.prefix, ...(clock ? { clock } : {}) };
}

/** Polls `check` on real time (the global timers may be faked) until it holds or `ms` passed. */
async function until(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

test("clock: 'process': a scheduler's first tick is on the faked Date", async (t) => {
  const connection = await connectionFor(t, 'process');
  t.mock.timers.enable({ apis: ['Date'], now: FAKE_NOW });
  const queue = new Queue('ticks', { connection });
  t.after(() => queue.close());
  const job = await queue.upsertJobScheduler('s', { every: 60_000 }, { name: 'tick' });
  const tick = Number(String(job?.id).split(':').pop());
  assert.ok(Math.abs(tick - FAKE_NOW) <= 60_000, `tick ${tick} is on the faked clock (${FAKE_NOW})`);
});

test("default clock: a scheduler's first tick is on ZooKeeper's time, whatever Date says", async (t) => {
  const connection = await connectionFor(t);
  t.mock.timers.enable({ apis: ['Date'], now: FAKE_NOW });
  const queue = new Queue('ticks', { connection });
  t.after(() => queue.close());
  const job = await queue.upsertJobScheduler('s', { every: 60_000 }, { name: 'tick' });
  const tick = Number(String(job?.id).split(':').pop());
  assert.ok(tick < FAKE_NOW - 300 * 24 * HOUR, `tick ${tick} is on ZooKeeper's clock, not the faked one`);
});

test("clock: 'process': a delayed job runs when faked timers pass its delay, the session on real timers", async (t) => {
  const connection = await connectionFor(t, 'process');
  const queue = new Queue('delays', { connection });
  t.after(() => queue.close());
  const ran: string[] = [];
  const worker = new Worker('delays', async (job) => void ran.push(job.id as string), { connection });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  t.mock.timers.enable({ apis: ['Date', 'setTimeout'], now: Date.now() });
  t.after(() => t.mock.timers.reset());
  const job = await queue.add('later', {}, { delay: HOUR });
  assert.equal(await job.getState(), 'delayed');
  // faked setTimeout never fires on its own: requests, heartbeats and watches must not depend on it
  await sleep(500);
  assert.equal(await job.getState(), 'delayed');
  t.mock.timers.tick(HOUR);
  await until(async () => ran.includes(job.id as string), 'the delayed job to run');
});

test("clock: 'process': a scheduler's next iteration is due one interval later on the faked clock", async (t) => {
  const connection = await connectionFor(t, 'process');
  const queue = new Queue('iterations', { connection });
  t.after(() => queue.close());
  const ran: string[] = [];
  const seen: { delay?: number; timestamp: number }[] = [];
  const worker = new Worker(
    'iterations',
    async (job) => {
      ran.push(job.id as string);
      seen.push({ delay: job.opts.delay, timestamp: job.timestamp });
    },
    { connection },
  );
  t.after(() => worker.close());
  await worker.waitUntilReady();
  t.mock.timers.enable({ apis: ['Date', 'setTimeout'], now: FAKE_NOW });
  t.after(() => t.mock.timers.reset());
  await queue.upsertJobScheduler('s', { every: HOUR }, { name: 'tick' });
  await until(async () => ran.length === 1 && (await queue.getDelayedCount()) === 1, 'the first iteration to run');
  const [first] = ran.map((id) => Number(id.split(':').pop()));
  t.mock.timers.tick(HOUR);
  await until(async () => ran.length === 2, 'the second iteration to run, one faked hour later');
  assert.equal(Number(ran[1]?.split(':').pop()), (first as number) + HOUR);
  // added as the first started, on the faked clock: due an interval after it
  assert.equal(seen[1]?.delay, HOUR);
  assert.ok((seen[1]?.timestamp ?? 0) >= FAKE_NOW, `timestamp ${seen[1]?.timestamp} is on the faked clock`);
});

test('default clock: faked timers passing a delay do not promote the job', async (t) => {
  const connection = await connectionFor(t);
  const queue = new Queue('delays', { connection });
  t.after(() => queue.close());
  const worker = new Worker('delays', async () => undefined, { connection });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  t.mock.timers.enable({ apis: ['Date', 'setTimeout'], now: Date.now() });
  t.after(() => t.mock.timers.reset());
  const job = await queue.add('later', {}, { delay: HOUR });
  t.mock.timers.tick(HOUR);
  await sleep(1_000);
  assert.equal(await job.getState(), 'delayed');
});

test("a Worker whose Date is faked at the epoch (sinon's default) claims the jobs added while it waits", async (t) => {
  const connection = await connectionFor(t, 'process');
  t.mock.timers.enable({ apis: ['Date', 'setTimeout'], now: 0 });
  t.after(() => t.mock.timers.reset());
  const queue = new Queue('epoch', { connection });
  t.after(() => queue.close());
  const ran: number[] = [];
  const worker = new Worker('epoch', async (job) => void ran.push(job.data.i), { connection });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  await sleep(200); // the worker is waiting for work, its view of the queue empty
  for (let i = 0; i < 3; i++) await queue.add('j', { i });
  await until(async () => ran.length === 3, 'the three jobs to run');
});

test("clock: 'process': a rate-limit window runs out on the faked clock", async (t) => {
  const connection = await connectionFor(t, 'process');
  t.mock.timers.enable({ apis: ['Date'], now: FAKE_NOW });
  const queue = new Queue('windows', { connection });
  t.after(() => queue.close());
  await queue.rateLimit(60_000);
  assert.equal(await queue.getRateLimitTtl(), 60_000);
  t.mock.timers.tick(45_000);
  assert.equal(await queue.getRateLimitTtl(), 15_000);
  t.mock.timers.tick(15_000);
  assert.ok((await queue.getRateLimitTtl()) <= 0, 'the window ended with the faked minute');
});

test('connection.clock: anything but zookeeper or process is refused with a typed error', () => {
  assert.throws(
    () => new Queue('bad', { connection: { connectionString: '127.0.0.1:1', clock: 'local' as never } }),
    (err: unknown) =>
      err instanceof InvalidArgumentError && err.code === 'ZKQ_INVALID_ARGUMENT' && err.argument === 'connection.clock',
  );
});
