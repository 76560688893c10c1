/**
 * BullMQ's queue meta and global rate limit on the ZooKeeper backend: the
 * fields a Queue writes, global concurrency and rate limit settings shared
 * by every Queue of the queue, `paused` as zkq's own pause flag, and the
 * rate-limit window judged on ZooKeeper's clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

test('a Queue writes its meta; settings are shared by every Queue of the queue', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('settings-q', { connection });
  t.after(() => queue.close());
  const version = await queue.getVersion(); // resolves once the Queue wrote its meta
  assert.match(version ?? '', /^bullmq:\d+\.\d+\.\d+/);
  assert.deepEqual(await queue.getMeta(), { maxLenEvents: 10_000, version, paused: false });
  const other = new Queue('settings-q', { connection, streams: { events: { maxLen: 500 } } });
  t.after(() => other.close());
  await other.getVersion(); // the latest Queue's maxLen wins, as on Redis
  assert.deepEqual(await queue.getMeta(), { maxLenEvents: 500, version, paused: false });

  assert.equal(await queue.getGlobalConcurrency(), null);
  assert.equal(await queue.getGlobalRateLimit(), null);
  await queue.setGlobalConcurrency(3);
  await queue.setGlobalRateLimit(10, 1000);
  assert.equal(await other.getGlobalConcurrency(), 3);
  assert.deepEqual(await other.getGlobalRateLimit(), { max: 10, duration: 1000 });
  assert.deepEqual(await other.getMeta(), {
    concurrency: 3,
    max: 10,
    duration: 1000,
    maxLenEvents: 500,
    version,
    paused: false,
  });
  await other.removeGlobalConcurrency();
  await other.removeGlobalRateLimit();
  assert.equal(await queue.getGlobalConcurrency(), null);
  assert.equal(await queue.getGlobalRateLimit(), null);

  // the backend answers as Redis's HSET/HDEL/HGET/HEXISTS do
  const backend = queue.getBackend();
  assert.equal(await backend.setQueueMeta({ a: 1, b: 'two' }), 2);
  assert.equal(await backend.setQueueMeta({ a: 'one', c: 3 }), 1);
  assert.deepEqual(await backend.getQueueMetaFields(['a', 'b', 'c', 'd']), ['one', 'two', '3', null]);
  assert.equal(await backend.hasQueueMetaField('b'), true);
  assert.equal(await backend.removeQueueMetaFields(['a', 'b', 'd']), 2);
  assert.equal(await backend.hasQueueMetaField('b'), false);
  assert.equal(await backend.getQueueMetaField('c'), '3');
});

test('writers of different fields at once lose none (compare-and-set)', async (t) => {
  const { connection } = await bullEnv(t);
  const queues = Array.from({ length: 4 }, () => new Queue('cas', { connection }));
  t.after(() => Promise.all(queues.map((q) => q.close())));
  await Promise.all(
    queues.flatMap((q, i) =>
      Array.from({ length: 5 }, (_, j) => q.getBackend().setQueueMeta({ [`f${i}-${j}`]: i * 10 + j })),
    ),
  );
  const meta = await queues[0]?.getBackend().getQueueMeta();
  for (let i = 0; i < 4; i++) for (let j = 0; j < 5; j++) assert.equal(meta?.[`f${i}-${j}`], String(i * 10 + j));
});

test('paused is zkq’s pause flag: Queue.isPaused and getMeta follow it, and setting the field pauses', async (t) => {
  const { env, connection } = await bullEnv(t);
  const queue = new Queue('pz', { connection });
  const zkq = new ZkqQueue('pz', env);
  t.after(() => Promise.all([queue.close(), zkq.close()]));
  assert.equal(await queue.isPaused(), false);
  await zkq.pause();
  assert.equal(await queue.isPaused(), true);
  assert.equal((await queue.getMeta()).paused, true);
  assert.equal(await queue.getBackend().getQueueMetaField('paused'), '1');
  await zkq.resume();
  assert.equal(await queue.isPaused(), false);
  assert.equal((await queue.getMeta()).paused, false);

  const backend = queue.getBackend();
  assert.equal(await backend.setQueueMeta({ paused: 1 }), 1);
  assert.equal(await zkq.isPaused(), true);
  assert.equal(await backend.setQueueMeta({ paused: 1 }), 0); // already there, as HSET counts it
  assert.equal(await backend.removeQueueMetaFields(['paused']), 1);
  assert.equal(await zkq.isPaused(), false);
  assert.equal(await backend.removeQueueMetaFields(['paused']), 0);
});

test('the rate-limit window: its ttl, the max it applies to, removal, and expiry', async (t) => {
  const { connection } = await bullEnv(t);
  const queue = new Queue('rl', { connection });
  t.after(() => queue.close());
  assert.equal(await queue.getRateLimitTtl(), -2); // no window: Redis's PTTL of a missing key
  assert.equal(await queue.getRateLimitTtl(5), 0);
  assert.equal(await queue.removeRateLimitKey(), 0);

  await queue.rateLimit(60_000);
  const ttl = await queue.getRateLimitTtl();
  assert.ok(ttl > 0 && ttl <= 60_000, `ttl ${ttl} within the window`);
  const forMax = await queue.getRateLimitTtl(5); // a window set by rateLimit limits whatever the max
  assert.ok(forMax > 0 && forMax <= 60_000);
  await queue.setGlobalRateLimit(3, 1000);
  assert.ok((await queue.getRateLimitTtl()) > 0, 'the queue max applies when none is given');
  assert.equal(await queue.removeRateLimitKey(), 1);
  assert.equal(await queue.getRateLimitTtl(), 0); // a max, no window
  await queue.removeGlobalRateLimit();
  assert.equal(await queue.getRateLimitTtl(), -2);

  // a later window replaces the earlier one; a short one ends by itself
  await queue.rateLimit(60_000);
  await queue.rateLimit(200);
  assert.ok((await queue.getRateLimitTtl()) <= 200);
  await waitFor(async () => (await queue.getRateLimitTtl()) === -2, { timeoutMs: 10_000, what: 'the window to end' });
  assert.equal(await queue.removeRateLimitKey(), 0);
  // a window of 0 ms ends the current one
  await queue.rateLimit(60_000);
  await queue.rateLimit(0);
  assert.equal(await queue.getRateLimitTtl(), -2);
});
