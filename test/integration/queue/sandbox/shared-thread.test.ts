/**
 * File processors sharing a thread (`jobsPerThread` > 1, by default
 * `ceil(concurrency / threads)`): jobs run side by side on one thread; a
 * cancel or a lost claim aborts only its own job, whose processor sees its
 * signal while the thread runs on; a thread that crashes fails every job it
 * runs, each retried as its attempts allow. With `jobsPerThread: 1` an aborted
 * job still ends its thread.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError, LostJobError } from '@zkq/core';
import { QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { revokeByHand } from '../../../helpers/revoke.js';
import { reportChannel } from '../../../helpers/thread-reports.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';

// Workers holding `hold` jobs are closed with force after a test: a graceful close would wait on a
// job that a failed assertion never released, and hang the file instead of reporting the failure.
const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/threaded.mjs', import.meta.url));

interface Report {
  id: string;
  event: 'started' | 'aborted';
  threadId: number;
  reason?: string;
}

/** The channel on which the fixture's `hold` jobs report, and on which they are released. */
function reports(t: { after(fn: () => unknown): void }) {
  const { name, seen, post } = reportChannel<Report>(t, 'hold');
  return {
    name,
    seen,
    /** Waits for job `id`'s report of `event`. */
    next: (id: string, event: Report['event']) =>
      waitFor(() => seen.find((r) => r.id === id && r.event === event), { what: `${event} ${id}` }),
    release: (id: string) => post({ release: id }),
  };
}

async function failedReason(queue: Queue, id: string): Promise<string> {
  const job = await waitFor(async () => ((await queue.getJobState(id)) === 'failed' ? queue.getJob(id) : undefined), {
    what: `job ${id} to fail`,
  });
  return job.failedReason as string;
}

test('by default, all of concurrency runs at once: four jobs side by side on one thread', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('side', env);
  t.after(() => queue.close());
  const worker = new Worker('side', PROCESSOR, { ...env, concurrency: 4, threads: 1 });
  t.after(() => worker.close());
  // each waits in its thread until all four run there
  const jobs = await queue.addBulk(
    Array.from({ length: 4 }, () => ({ name: 'b', data: { mode: 'barrier', group: 'g', size: 4 } })),
  );
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 4, { what: '4 completed' });
  const threads = new Set(
    await Promise.all(jobs.map(async (j) => (await queue.getJob(j.id))?.returnvalue.threadId as number)),
  );
  assert.equal(threads.size, 1, 'one thread ran them all');
});

test('a cancel of one job on a shared thread fails only that job; its processor sees the signal', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('cancel-shared', env);
  t.after(() => queue.close());
  const r = reports(t);
  const worker = new Worker('cancel-shared', PROCESSOR, { ...env, concurrency: 2, threads: 1 });
  t.after(() => worker.close(true));
  const a = await queue.add('h', { mode: 'hold', report: r.name });
  const b = await queue.add('h', { mode: 'hold', report: r.name });
  const [ra, rb] = await Promise.all([r.next(a.id, 'started'), r.next(b.id, 'started')]);
  assert.equal(ra.threadId, rb.threadId, 'both run on the one thread');

  assert.equal(await queue.cancelJob(a.id, 'operator asked'), true);
  assert.equal((await r.next(a.id, 'aborted')).reason, 'operator asked');
  assert.equal(await failedReason(queue, a.id), 'operator asked');
  assert.equal(await queue.getJobState(b.id), 'active', 'the other job runs on');

  r.release(b.id);
  await waitFor(async () => (await queue.getJobState(b.id)) === 'completed', { what: `${b.id} completed` });
  assert.equal((await queue.getJob(b.id))?.returnvalue, 'released');
  assert.equal(
    r.seen.some((s) => s.id === b.id && s.event === 'aborted'),
    false,
  );
});

test('a lost claim aborts only its own job on a shared thread; its result is dropped', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('lost-shared', env);
  t.after(() => queue.close());
  const r = reports(t);
  const worker = new Worker('lost-shared', PROCESSOR, {
    ...env,
    concurrency: 2,
    threads: 1,
    lockRenewTime: 200,
    housekeeping: false,
  });
  t.after(() => worker.close(true));
  const a = await queue.add('h', { mode: 'hold', report: r.name });
  const b = await queue.add('h', { mode: 'hold', report: r.name });
  await Promise.all([r.next(a.id, 'started'), r.next(b.id, 'started')]);

  // the leader's revocation of a hung claim, done by hand: the next renewal finds it gone
  const lost = nextEvent<[{ id: string }, Error]>(worker, 'lost');
  const store = new QueueStore(await queue.client, 'lost-shared');
  await revokeByHand(store, a.id as string);
  const [job, err] = await lost;
  assert.equal(job.id, a.id);
  assert.ok(err instanceof LostJobError);
  assert.match((await r.next(a.id, 'aborted')).reason ?? '', /aborted/);

  // run again (it ends at once the second time), while the other job still holds its thread slot
  await waitFor(async () => (await queue.getJobState(a.id)) === 'completed', { what: `${a.id} run again` });
  assert.equal((await queue.getJob(a.id))?.returnvalue, 'again');
  assert.equal(await queue.getJobState(b.id), 'active');
  r.release(b.id);
  await waitFor(async () => (await queue.getJobState(b.id)) === 'completed', { what: `${b.id} completed` });
  assert.equal((await queue.getJob(b.id))?.returnvalue, 'released');
});

test('a thread that crashes fails every job it runs; each is retried as its attempts allow', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('crash-shared', env);
  t.after(() => queue.close());
  const worker = new Worker('crash-shared', PROCESSOR, { ...env, concurrency: 3, threads: 1 });
  t.after(() => worker.close());
  const data = { mode: 'barrier', group: 'c', size: 3 };
  // the two others wait on the thread until it dies under them
  const others = await queue.addBulk([
    { name: 'c', data: { ...data, hang: true }, opts: { attempts: 2 } },
    { name: 'c', data: { ...data, hang: true }, opts: { attempts: 2 } },
  ]);
  const exit = await queue.add('c', { ...data, exit: true }, { attempts: 1 });
  assert.match(await failedReason(queue, exit.id), /exit/i);
  for (const j of others) {
    await waitFor(async () => (await queue.getJobState(j.id)) === 'completed', { what: `${j.id} completed` });
    const done = await queue.getJob(j.id);
    assert.equal(done?.attemptsMade, 2, 'one attempt failed with the thread, the next completed');
    assert.equal(done?.returnvalue.group, 'c');
  }
});

test('close(true) with jobs on a shared thread ends at once; the jobs are left to run again', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('force-shared', env);
  t.after(() => queue.close());
  const r = reports(t);
  const worker = new Worker('force-shared', PROCESSOR, { ...env, concurrency: 2, threads: 1 });
  t.after(() => worker.close(true));
  const jobs = await queue.addBulk([
    { name: 'i', data: { mode: 'ignore' } },
    { name: 'h', data: { mode: 'hold', report: r.name } },
  ]);
  const [ignoring, holding] = jobs.map((j) => j.id);
  await r.next(holding as string, 'started');
  await waitFor(async () => (await queue.getJobState(ignoring as string)) === 'active', { what: 'both active' });
  await worker.close(true); // the processor that ignores its signal does not hold it up
  for (const id of [ignoring, holding]) assert.notEqual(await queue.getJobState(id as string), 'failed');
});

test('jobsPerThread: 1 ends the thread of a cancelled job, as a task alone on it', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('cancel-alone', env);
  t.after(() => queue.close());
  const r = reports(t);
  const worker = new Worker('cancel-alone', PROCESSOR, { ...env, concurrency: 2, threads: 1, jobsPerThread: 1 });
  t.after(() => worker.close(true));
  const a = await queue.add('h', { mode: 'hold', report: r.name });
  const first = await r.next(a.id, 'started');
  assert.equal(await queue.cancelJob(a.id, 'stop it'), true);
  assert.equal(await failedReason(queue, a.id), 'stop it');
  const b = await queue.add('h', { mode: 'hold', report: r.name });
  const second = await r.next(b.id, 'started');
  assert.notEqual(second.threadId, first.threadId, 'the cancelled job took its thread down');
  assert.equal(
    r.seen.some((s) => s.event === 'aborted'),
    false,
    'the processor never saw a signal: its thread ended',
  );
  r.release(b.id);
  await waitFor(async () => (await queue.getJobState(b.id)) === 'completed', { what: `${b.id} completed` });
});

test('jobsPerThread must be an integer >= 1', async (t) => {
  const env = await queueEnv(t);
  for (const jobsPerThread of [0, 1.5, -2, '4' as unknown as number]) {
    assert.throws(
      () => new Worker('bad', PROCESSOR, { ...env, jobsPerThread, autorun: false }),
      (err: unknown) => err instanceof InvalidArgumentError && err.argument === 'jobsPerThread',
      `jobsPerThread ${String(jobsPerThread)}`,
    );
  }
});
