/**
 * Global limits on zkq's own Queue and Worker: the Worker's `limiter`, the
 * queue's global concurrency (also lowered while jobs run), RateLimitError
 * after `worker.rateLimit`, and bad input. Checked on what ZooKeeper recorded
 * (claim zxids and times, window nodes, finish zxids).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@zkq/core';
import { openSession, QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { assertRateLimited, type ClaimSeen, finishZxids, readClaim } from '../../helpers/limits.js';
import { queueEnv } from '../../helpers/queue.js';
import { expire, waitFor } from '../../helpers/zk.js';

async function setup(t: { name?: string; after: (fn: () => unknown) => void }, name: string) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const completed = (n: number) =>
    waitFor(async () => (await queue.getJobCounts('completed')).completed === n, { what: `${n} completed` });
  return { env, queue, session, layout: new QueueLayout(name), completed };
}

test('a Worker limiter: at most max jobs start per window, windows at least duration apart', async (t) => {
  const { env, queue, session, layout, completed } = await setup(t, 'limiter');
  const claims: ClaimSeen[] = [];
  const worker = new Worker(
    'limiter',
    async (job) => {
      claims.push(await readClaim(session, layout, job.id));
    },
    { ...env, concurrency: 4, limiter: { max: 2, duration: 300 } },
  );
  t.after(() => worker.close());
  await queue.addBulk(Array.from({ length: 7 }, (_, i) => ({ name: 'r', data: { i } })));
  await completed(7);
  assert.equal(claims.length, 7);
  assert.ok(assertRateLimited(claims, 2, 300) >= 4);
});

test('the global concurrency lowered while jobs run: no job starts until the running ones fit under it', async (t) => {
  const { env, queue, session, layout, completed } = await setup(t, 'lowered');
  await queue.setGlobalConcurrency(3);
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const claims: ClaimSeen[] = [];
  const processor = async (job: { id: string }) => {
    claims.push(await readClaim(session, layout, job.id));
    await gate;
  };
  const workers = [1, 2].map(() => new Worker('lowered', processor, { ...env, concurrency: 5 }));
  t.after(() => Promise.all(workers.map((w) => w.close())));
  await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'l', data: { i } })));
  await waitFor(() => claims.length === 3, { what: '3 jobs running' });
  assert.equal(await queue.isMaxed(), true);
  await queue.setGlobalConcurrency(1);
  const lowered = (await session.exists(layout.settings))?.mzxid as number;
  open();
  await completed(6);

  assert.equal(claims.length, 6);
  const finished = await finishZxids(session, layout, 'completed');
  const intervals = claims.map((c) => ({ id: c.id, start: c.czxid, end: finished.get(c.id) as number }));
  assert.equal(intervals.filter((i) => i.start < lowered).length, 3, 'nothing started beyond the first 3');
  for (const i of intervals.filter((x) => x.start > lowered)) {
    const alongside = intervals.filter((o) => o !== i && o.start < i.start && i.start < o.end);
    assert.deepEqual(alongside, [], `job ${i.id} started alone`);
  }
  assert.equal(await queue.getGlobalConcurrency(), 1);
  await queue.removeGlobalConcurrency();
  assert.equal(await queue.getGlobalConcurrency(), null);
});

test('RateLimitError after worker.rateLimit: back to waiting, uncounted and unreported, run again after the window', async (t) => {
  const { env, queue, session, layout, completed } = await setup(t, 'manual');
  const starts: ClaimSeen[] = [];
  let end = 0;
  const failed: string[] = [];
  const worker: Worker = new Worker(
    'manual',
    async (job) => {
      starts.push(await readClaim(session, layout, job.id));
      if (job.attemptsStarted === 1) {
        await worker.rateLimit(400);
        const { data, stat } = await session.getData(layout.limiter);
        end = stat.mtime + (JSON.parse(data.toString()) as { ms: number }).ms;
        throw Worker.RateLimitError();
      }
      return 'ran';
    },
    { ...env },
  );
  worker.on('failed', (job) => failed.push(job?.id ?? '?'));
  t.after(() => worker.close());
  const job = await queue.add('m', {});
  await completed(1);
  const done = await queue.getJob(job.id);
  assert.equal(done?.returnvalue, 'ran');
  assert.equal(done?.attemptsStarted, 2);
  assert.equal(done?.attemptsMade, 1);
  assert.deepEqual(failed, [], 'a rate-limited attempt is not a failure');
  assert.ok((starts[1] as ClaimSeen).ctime >= end, 'run again only once the window ended');
  assert.equal(await queue.getRateLimitTtl(), -2);
});

test('bad limits are refused at the entry with InvalidArgumentError', async (t) => {
  const { env, queue } = await setup(t, 'bad');
  for (const n of [0, -2, 2.5, Number.NaN, '3' as unknown as number]) {
    await assert.rejects(queue.setGlobalConcurrency(n), InvalidArgumentError, `concurrency ${String(n)}`);
  }
  await assert.rejects(queue.setGlobalRateLimit(5, 0), InvalidArgumentError);
  await assert.rejects(queue.setGlobalRateLimit(1.5, 100), InvalidArgumentError);
  await assert.rejects(queue.rateLimit(Number.POSITIVE_INFINITY), InvalidArgumentError);
  const bad: unknown[] = [{ max: 0, duration: 1000 }, { max: 2, duration: 0 }, { duration: 5 }, 'fast'];
  for (const limiter of bad) {
    assert.throws(
      () => new Worker('bad', async () => undefined, { ...env, limiter: limiter as never, autorun: false }),
      InvalidArgumentError,
    );
  }
  assert.throws(
    () => new Worker('bad', async () => undefined, { ...env, maximumRateLimitDelay: -1, autorun: false }),
    InvalidArgumentError,
  );
  assert.equal(await queue.getGlobalRateLimit(), null, 'nothing was written');
});

test('a session expiry mid-job: the renewer re-creates the claim and its slot together; the slot goes at the finish', async (t) => {
  const { env, queue, session, layout, completed } = await setup(t, 'reclaim');
  await queue.setGlobalConcurrency(1);
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const worker = new Worker(
    'reclaim',
    async () => {
      await gate;
    },
    { ...env, lockDuration: 2000 },
  );
  t.after(() => worker.close());
  const job = await queue.add('x', {});
  await waitFor(() => session.exists(layout.slot('s-0')), { what: 'the slot taken' });
  const own = await worker.client;
  const before = own.sessionId;
  await expire(own);
  const owner = async (path: string) => (await session.exists(path))?.ephemeralOwner;
  await waitFor(async () => (await owner(layout.claim(job.id))) === own.sessionId && own.sessionId !== before, {
    what: 'the claim re-created by the new session',
  });
  assert.equal(await owner(layout.slot('s-0')), own.sessionId, 'its slot with it');
  open();
  await completed(1);
  assert.deepEqual(await session.getChildren(layout.slotsDir), []);
});
