/**
 * Global limits across worker processes (BullMQ's Worker on the ZooKeeper
 * backend beside zkq's own Worker, on one queue): the rate limit and the
 * global concurrency hold whatever the number of processes, checked on what
 * ZooKeeper recorded (claim zxids and times, the window that counted each
 * claim, finish zxids), never on this machine's clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openSession, QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { assertRateLimited, claimLines, finishZxids, peakActive } from '../helpers/limits.js';
import { type Fixture, spawnFixture } from '../helpers/process.js';
import { queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/queue/limits-worker.ts', import.meta.url));

async function setup(t: { name?: string; after: (fn: () => unknown) => void }, name: string) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const spawned: Fixture[] = [];
  t.after(() => {
    for (const f of spawned) f.child.kill('SIGKILL');
  });
  const spawn = (opts: Record<string, unknown>) => {
    const f = spawnFixture(WORKER, [
      JSON.stringify({
        connectionString: env.connection.connectionString,
        namespace: env.prefix,
        queue: name,
        ...opts,
      }),
    ]);
    spawned.push(f);
    return f;
  };
  return { queue, session, layout: new QueueLayout(name), spawn };
}

async function allCompleted(queue: Queue, n: number): Promise<void> {
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === n, {
    timeoutMs: 40_000,
    what: `${n} jobs completed`,
  });
}

test('a rate limit holds across three worker processes of both front-ends', async (t) => {
  const { queue, spawn } = await setup(t, 'rate');
  const limiter = { max: 3, duration: 500 };
  const workers = [
    spawn({ frontEnd: 'bullmq', limiter, concurrency: 4 }),
    spawn({ frontEnd: 'bullmq', limiter, concurrency: 4 }),
    spawn({ frontEnd: 'zkq', limiter, concurrency: 4 }),
  ];
  await Promise.all(workers.map((w) => w.waitForLine(/^ready$/)));
  await queue.addBulk(Array.from({ length: 14 }, (_, i) => ({ name: 'r', data: { i } })));
  await allCompleted(queue, 14);

  const claims = workers.flatMap((w) => claimLines(w.lines));
  assert.equal(claims.length, 14, 'each job started once');
  const windows = assertRateLimited(claims, limiter.max, limiter.duration);
  assert.ok(windows >= Math.ceil(14 / limiter.max), `${windows} windows for 14 jobs at ${limiter.max} per window`);
  t.diagnostic(`claims per process: ${workers.map((w) => claimLines(w.lines).length).join(', ')}`);
});

test('a global concurrency holds across three worker processes of both front-ends', async (t) => {
  const { queue, session, layout, spawn } = await setup(t, 'conc');
  await queue.setGlobalConcurrency(2);
  const workers = [
    spawn({ frontEnd: 'bullmq', concurrency: 3, sleepMs: 100, pairs: 2 }),
    spawn({ frontEnd: 'zkq', concurrency: 3, sleepMs: 100, pairs: 2 }),
    spawn({ frontEnd: 'bullmq', concurrency: 3, sleepMs: 100, pairs: 2 }),
  ];
  await Promise.all(workers.map((w) => w.waitForLine(/^ready$/)));
  // the first jobs wait (a while) for a second one to be active: the limit is reached, not just respected
  await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'c', data: { i, pair: i < 4 } })));
  await allCompleted(queue, 12);

  const claims = workers.flatMap((w) => claimLines(w.lines));
  assert.equal(claims.length, 12, 'each job started once');
  const finished = await finishZxids(session, layout, 'completed');
  const intervals = claims.map((c) => ({ start: c.czxid, end: finished.get(c.id) as number }));
  for (const i of intervals) assert.ok(i.end > i.start, 'every claim was finished after it was made');
  assert.equal(peakActive(intervals), 2, 'at most 2 jobs active at once, and 2 at some point');
  for (const c of claims) assert.ok(c.slot === 's-0' || c.slot === 's-1', `job ${c.id} held slot ${c.slot}`);
  assert.deepEqual(await session.getChildren(layout.slotsDir), [], 'every slot released');
});

test('a worker process killed while it holds the slots: others wait, then take over once its session ends', async (t) => {
  const { queue, session, layout, spawn } = await setup(t, 'killed');
  await queue.setGlobalConcurrency(2);
  const victim = spawn({ frontEnd: 'bullmq', concurrency: 3, mode: 'hang', sessionTimeout: 2000 });
  await victim.waitForLine(/^ready$/);
  await queue.addBulk(Array.from({ length: 2 }, (_, i) => ({ name: 'k', data: { i } })));
  await waitFor(() => claimLines(victim.lines).length === 2, { what: 'the victim holding both slots' });
  await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'k', data: { i: i + 2 } })));

  const survivors = [
    spawn({ frontEnd: 'zkq', concurrency: 3, sleepMs: 50 }),
    spawn({ frontEnd: 'bullmq', concurrency: 3, sleepMs: 50 }),
  ];
  await Promise.all(survivors.map((w) => w.waitForLine(/^ready$/)));
  // Both looked, found the queue maxed, and wait in the line of idle workers (behind the victim's third claimer).
  await waitFor(async () => (await session.getChildren(layout.idleDir)).length === 3, {
    what: 'both survivors waiting',
  });
  assert.equal(await queue.isMaxed(), true);
  const marker = await session.create(`${layout.root}/marker`);
  const markerZxid = (await session.exists(marker))?.czxid as number;
  victim.child.kill('SIGKILL');
  await victim.exited;
  await allCompleted(queue, 6);

  const hung = claimLines(victim.lines);
  const claims = survivors.flatMap((w) => claimLines(w.lines));
  assert.equal(claims.length, 6, 'every job ran to completion in a survivor, once');
  for (const h of hung)
    assert.ok(
      claims.some((c) => c.id === h.id),
      `job ${h.id} ran again`,
    );
  for (const c of claims) {
    assert.ok(c.czxid > markerZxid, `job ${c.id} was not claimed while the victim held both slots`);
    assert.ok(c.slot === 's-0' || c.slot === 's-1', `job ${c.id} held slot ${c.slot}`);
  }
  const finished = await finishZxids(session, layout, 'completed');
  const peak = peakActive(claims.map((c) => ({ start: c.czxid, end: finished.get(c.id) as number })));
  assert.ok(peak <= 2, `at most 2 jobs active at once (${peak})`);
  assert.deepEqual(await session.getChildren(layout.slotsDir), []);
});

test('a frozen slot holder: the leader revokes its claim and slot, another runs the job, the late result is refused', async (t) => {
  const { queue, session, layout, spawn } = await setup(t, 'frozen');
  await queue.setGlobalConcurrency(1);
  // the victim takes no part in housekeeping (the survivor is the leader) and keeps its session while frozen
  const victim = spawn({
    frontEnd: 'zkq',
    concurrency: 2,
    sleepMs: 3000,
    housekeeping: false,
    sessionTimeout: 30_000,
    lockDuration: 1500,
  });
  await victim.waitForLine(/^ready$/);
  const job = await queue.add('f', {});
  await victim.waitForLine(new RegExp(`^claim ${job.id} `));
  victim.child.kill('SIGSTOP');
  t.after(() => victim.child.kill('SIGCONT'));

  const survivor = spawn({ frontEnd: 'bullmq', concurrency: 2, sleepMs: 50, lockDuration: 1500 });
  await survivor.waitForLine(new RegExp(`^completed ${job.id}$`), 40_000);
  const [first] = claimLines(victim.lines);
  const [again] = claimLines(survivor.lines);
  assert.equal(first?.slot, 's-0');
  assert.equal(again?.slot, 's-0', 'the revocation freed the slot');
  assert.ok((again?.czxid as number) > (first?.czxid as number));
  victim.child.kill('SIGCONT');
  await victim.waitForLine(new RegExp(`^lost ${job.id}$`), 20_000);
  assert.equal((await queue.getJob(job.id))?.returnvalue, `done-by-${survivor.child.pid}`);
  assert.deepEqual(await session.getChildren(layout.slotsDir), [], 'the late finish touched no slot');
  assert.equal(await queue.isMaxed(), false);
});
