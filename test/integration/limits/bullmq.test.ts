/**
 * BullMQ's rate limits and global concurrency on the ZooKeeper backend:
 * moveToActive's answer when limited, the Worker's `limiter`, the queue's
 * global concurrency and rate limit, RateLimitError after a manual
 * rateLimit, and bad input refused at the entry. Times are ZooKeeper's (claim
 * and window nodes), never this machine's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { InvalidArgumentError, type Session } from '@zkq/core';
import { openSession, QueueLayout } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { assertRateLimited, type ClaimSeen, readClaim } from '../../helpers/limits.js';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

async function setup(t: { name?: string; after: (fn: () => unknown) => void }, name: string) {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue(name, { connection });
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  return { connection, queue, session, layout: new QueueLayout(name) };
}

/** The end of the current window, on ZooKeeper's clock (its node's mtime + ms). */
async function windowEnd(session: Session, layout: QueueLayout): Promise<number> {
  const { data, stat } = await session.getData(layout.limiter);
  return stat.mtime + (JSON.parse(data.toString()) as { ms: number }).ms;
}

test('moveToActive answers [null, "", ttl, 0] while rate limited; the ttl reads follow the window', async (t) => {
  const { connection, queue } = await setup(t, 'direct');
  await queue.addBulk([
    { name: 'a', data: {} },
    { name: 'b', data: {} },
  ]);
  const backend = createZooKeeperBackend('direct', { connection, limiter: { max: 1, duration: 60_000 } } as never, {
    withBlockingConnection: true,
  });
  t.after(() => backend.close());
  const [first] = await backend.moveToActive('w:1');
  assert.equal(first?.name, 'a');
  const limited = await backend.moveToActive('w:2');
  assert.equal(limited[0], null);
  assert.equal(limited[1], '');
  assert.ok(limited[2] > 0 && limited[2] <= 60_000, `rate-limit delay ${limited[2]}`);
  assert.equal(limited[3], 0);

  const ttl = await queue.getRateLimitTtl();
  assert.ok(ttl > 0 && ttl <= 60_000);
  assert.ok((await queue.getRateLimitTtl(1)) > 0, 'the window holds 1 job: limited for max 1');
  assert.equal(await queue.getRateLimitTtl(5), 0, 'not for max 5');
  assert.equal(await queue.removeRateLimitKey(), 1);
  const [second] = await backend.moveToActive('w:3');
  assert.equal(second?.name, 'b', 'a new window opens once the old one is removed');
});

test('a Worker limiter: at most max jobs start per window, windows at least duration apart', async (t) => {
  const { connection, queue, session, layout } = await setup(t, 'limiter');
  const claims: ClaimSeen[] = [];
  const worker = new Worker(
    'limiter',
    async (job) => {
      claims.push(await readClaim(session, layout, job.id as string));
    },
    { connection, concurrency: 4, limiter: { max: 2, duration: 300 } },
  );
  t.after(() => worker.close());
  await queue.addBulk(Array.from({ length: 7 }, (_, i) => ({ name: 'r', data: { i } })));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 7, { what: '7 completed' });
  assert.equal(claims.length, 7);
  assert.ok(assertRateLimited(claims, 2, 300) >= 4);
});

test('the global concurrency: two Workers of concurrency 3 run at most 2 jobs at once; isMaxed says so', async (t) => {
  const { connection, queue } = await setup(t, 'conc');
  assert.equal(await queue.getGlobalConcurrency(), null);
  await queue.setGlobalConcurrency(2);
  assert.equal(await queue.getGlobalConcurrency(), 2);
  let running = 0;
  let peak = 0;
  let maxedSeen = false;
  const processor = async () => {
    running++;
    peak = Math.max(peak, running);
    if (running === 2) maxedSeen ||= await queue.isMaxed();
    await new Promise((r) => setTimeout(r, 60));
    running--;
  };
  const workers = [1, 2].map(() => new Worker('conc', processor, { connection, concurrency: 3 }));
  t.after(() => Promise.all(workers.map((w) => w.close())));
  await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'c', data: { i } })));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 10, { what: '10 completed' });
  assert.ok(peak <= 2, `peak ${peak}`);
  assert.equal(maxedSeen, true);
  assert.equal(await queue.isMaxed(), false);
  await queue.removeGlobalConcurrency();
  assert.equal(await queue.getGlobalConcurrency(), null);
});

test('RateLimitError after worker.rateLimit: the job waits out the window, its attempt not counted', async (t) => {
  const { connection, queue, session, layout } = await setup(t, 'manual');
  let end = 0;
  const starts: ClaimSeen[] = [];
  const worker = new Worker(
    'manual',
    async (job) => {
      starts.push(await readClaim(session, layout, job.id as string));
      if (job.attemptsStarted === 1) {
        await worker.rateLimit(400);
        end = await windowEnd(session, layout);
        const ttl = await queue.getRateLimitTtl();
        assert.ok(ttl > 0 && ttl <= 400, `ttl ${ttl}`);
        throw Worker.RateLimitError();
      }
      return 'ran';
    },
    { connection, limiter: { max: 5, duration: 100 } },
  );
  t.after(() => worker.close());
  const job = await queue.add('m', {});
  await waitFor(async () => (await queue.getJob(job.id as string))?.returnvalue === 'ran', { what: 'completed' });
  const done = await queue.getJob(job.id as string);
  assert.equal(done?.attemptsStarted, 2);
  assert.equal(done?.attemptsMade, 1, 'the rate-limited attempt is not counted');
  assert.equal(starts.length, 2);
  assert.ok((starts[1] as ClaimSeen).ctime >= end, 'started again only once the window ended');
});

test('a manual window holds back every worker, one without a limiter too', async (t) => {
  const { connection, queue, session, layout } = await setup(t, 'plain');
  const starts: ClaimSeen[] = [];
  const worker = new Worker(
    'plain',
    async (job) => {
      starts.push(await readClaim(session, layout, job.id as string));
    },
    { connection },
  );
  t.after(() => worker.close());
  await worker.waitUntilReady();
  await queue.rateLimit(300);
  const end = await windowEnd(session, layout);
  await queue.add('n', {});
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, { what: 'the job done' });
  assert.ok((starts[0] as ClaimSeen).ctime >= end, 'started once the window ended');
});

test('bad limits are refused at the entry with InvalidArgumentError', async (t) => {
  const { connection, queue } = await setup(t, 'bad');
  for (const n of [0, -1, 1.5, Number.NaN]) {
    await assert.rejects(queue.setGlobalConcurrency(n), InvalidArgumentError, `concurrency ${n}`);
  }
  await assert.rejects(queue.setGlobalRateLimit(0, 1000), InvalidArgumentError);
  await assert.rejects(queue.setGlobalRateLimit(10, 0.5), InvalidArgumentError);
  await assert.rejects(queue.rateLimit(Number.NaN), InvalidArgumentError);
  for (const limiter of [{ max: 0, duration: 1000 }, { max: 1, duration: -5 }, { max: 1 }]) {
    assert.throws(
      () => new Worker('bad', async () => undefined, { connection, limiter: limiter as never, autorun: false }),
      InvalidArgumentError,
    );
  }
  assert.equal(await queue.getGlobalConcurrency(), null, 'nothing was written');
});
