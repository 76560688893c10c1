/**
 * Every deduplication key has an owner that deletes it: the finish of its
 * job (a key without ttl), the removal of its job (remove, drain, clean), or
 * the leader's sweep once its ttl ran out; a key taken over by a newer job
 * is left to that job. Keys are counted on the server, under `dedup/`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { DEDUP_LISTING_MAX, openSession, QueueStore, sweepDedupKeys } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { heldWorker } from '../../helpers/held-worker.js';
import { startLeader } from '../../helpers/housekeeper.js';
import { type QueueTestEnv, queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const Bull = withBackend(createZooKeeperBackend);

async function rawStore(t: { after: (fn: () => unknown) => void }, env: QueueTestEnv, queue: string) {
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  return new QueueStore(session, queue);
}

/** Keys under `dedup/` (its shard directories and itself not counted). */
async function keyCount(store: QueueStore): Promise<number> {
  const shards = await store.children(store.layout.dedupDir);
  const counts = await Promise.all(
    shards.map(async (s) => (await store.children(`${store.layout.dedupDir}/${s}`)).length),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** Waits until ZooKeeper's clock is `ms` past now (the ttl of a key written now has run out then). */
async function serverTimePasses(store: QueueStore, ms: number): Promise<void> {
  const start = await store.serverNow();
  await waitFor(async () => (await store.serverNow()) - start >= ms, { what: `${ms} ms on ZooKeeper's clock` });
}

const JOBS = 200;
const TTL = 1500;

test(`${JOBS} jobs with distinct deduplication ids, run by zkq's Worker and removed, leave no key once their ttls ran out`, async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'leak');
  const queue = new Queue('leak', env);
  t.after(() => queue.close());
  const jobs = Array.from({ length: JOBS }, (_, i) => ({
    name: 'order',
    data: { i },
    opts: {
      deduplication: i % 2 === 0 ? { id: `order-${i}` } : { id: `order-${i}`, ttl: TTL },
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 1,
    },
  }));
  const added = await queue.addBulk(jobs);
  assert.equal(new Set(added.map((j) => j.id)).size, JOBS);
  assert.equal(await keyCount(store), JOBS);
  // a quarter fails: a failure is a finish too
  const worker = new Worker(
    'leak',
    async (job) => {
      if (job.data.i % 4 < 2 && job.data.i % 8 >= 4) throw new Error('no');
      return 'ok';
    },
    { ...env, concurrency: 20 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await queue.count()) === 0 && (await queue.getActiveCount()) === 0, {
    timeoutMs: 60_000,
    what: 'every job run',
  });
  await worker.close(); // its leader would sweep too, a minute after it was elected
  // the finishes deleted the keys without ttl; a ttl key outlives its job (it throttles until its ttl ran out)
  await waitFor(async () => (await keyCount(store)) === JOBS / 2, { what: 'the keys without ttl deleted' });
  await serverTimePasses(store, TTL);
  assert.equal((await sweepDedupKeys(store, () => [])).deleted, JOBS / 2);
  assert.equal(await keyCount(store), 0);
  assert.deepEqual(await store.children(store.layout.dedupDir), [], 'the empty shards went too (dedup/ stays)');
  const again = await queue.add('order', {}, jobs[1]?.opts);
  assert.notEqual(again.id, added[1]?.id, 'the id adds a job again');
});

test("BullMQ's Worker on the ZooKeeper backend deletes the keys of the jobs it completes or fails", async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const store = await rawStore(t, env, 'bull-leak');
  const queue = new Bull.Queue('bull-leak', { connection });
  t.after(() => queue.close());
  const n = 40;
  await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({
      name: 'order',
      data: { i },
      opts: { deduplication: { id: `o-${i}` }, removeOnComplete: i % 3 === 0, removeOnFail: i % 3 === 0 },
    })),
  );
  assert.equal(await keyCount(store), n);
  const worker = new Bull.Worker(
    'bull-leak',
    async (job) => {
      if (job.data.i % 2 === 1) throw new Error('odd');
      return 'even';
    },
    { connection, concurrency: 8 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await keyCount(store)) === 0, { timeoutMs: 60_000, what: 'every key deleted' });
  const counts = await queue.getJobCounts('completed', 'failed', 'wait');
  assert.equal(counts.wait, 0);
  assert.ok((counts.completed ?? 0) + (counts.failed ?? 0) > 0, 'the jobs kept by retention are still there');
  assert.equal(await queue.getDeduplicationJobId('o-2'), null);
});

test('a finish leaves the key alone once a newer job took it over', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('taken', env);
  t.after(() => queue.close());
  const { started, release } = heldWorker(t, env, 'taken');
  const first = await queue.add('t', {}, { deduplication: { id: 'k' } });
  await waitFor(() => started.includes(first.id as string), { what: 'the first job to run' });
  // the key is freed while the first job runs, and a newer job takes it
  assert.equal(await queue.removeDeduplicationKey('k'), 1);
  const newer = await queue.add('t', {}, { deduplication: { id: 'k' }, delay: 600_000 });
  assert.notEqual(newer.id, first.id);
  release();
  await waitFor(async () => (await queue.getJobState(first.id as string)) === 'completed', {
    what: 'the first job done',
  });
  assert.equal(await queue.getDeduplicationJobId('k'), newer.id, "the newer job's key stays");
  assert.equal((await queue.add('t', {}, { deduplication: { id: 'k' } })).id, newer.id, 'and deduplicates');
});

test('drain, clean and remove delete the keys of the jobs they remove, ttl or not', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'removals');
  const queue = new Queue('removals', env);
  t.after(() => queue.close());
  const long = 600_000;
  await queue.add('w', {}, { deduplication: { id: 'waiting' } });
  await queue.add('w', {}, { deduplication: { id: 'waiting-ttl', ttl: long } });
  await queue.add('d', {}, { deduplication: { id: 'delayed' }, delay: long });
  await queue.drain(true);
  assert.equal(await queue.count(), 0);
  assert.equal(await keyCount(store), 0, 'drain took the keys of the jobs it removed');

  await queue.add('w', {}, { deduplication: { id: 'old', ttl: long }, delay: long });
  assert.deepEqual((await queue.clean(0, 0, 'delayed')).length, 1);
  assert.equal(await keyCount(store), 0, 'clean took the key of the job it removed');

  const job = await queue.add('w', {}, { deduplication: { id: 'one', ttl: long } });
  assert.equal(await queue.remove(job.id as string), 1);
  assert.equal(await keyCount(store), 0, 'remove took its key');
});

test("drain and clean on BullMQ's Queue delete the keys of the jobs they remove", async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const store = await rawStore(t, env, 'bull-removals');
  const queue = new Bull.Queue('bull-removals', { connection });
  t.after(() => queue.close());
  await queue.add('w', {}, { deduplication: { id: 'a' } });
  await queue.add('w', {}, { deduplication: { id: 'b', ttl: 600_000 }, delay: 600_000 });
  await queue.drain(true);
  assert.equal(await keyCount(store), 0, 'drain took the keys');
  await queue.add('w', {}, { deduplication: { id: 'c' }, priority: 2 });
  assert.equal((await queue.clean(0, 0, 'prioritized')).length, 1);
  assert.equal(await keyCount(store), 0, 'clean took the key');
  assert.equal(await queue.getDeduplicationJobId('c'), null);
});

test("the leader's housekeeping sweeps a ttl key once its ttl ran out, and the shard with it", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('swept', env);
  t.after(() => queue.close());
  // elected before the worker's own housekeeper joins, and sweeping every 200 ms
  const { store } = await startLeader(t, env, 'swept', { stalledInterval: 100, sweepMs: 200 });
  const throttled = await queue.add('t', {}, { deduplication: { id: 'again', ttl: TTL } });
  const worker = new Worker('swept', async () => 'ok', env);
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobState(throttled.id as string)) === 'completed', { what: 'the job run' });
  // the key, then its shard, in one pass (dedup/ stays)
  await waitFor(async () => (await store.children(store.layout.dedupDir)).length === 0, {
    what: "the leader's sweep",
  });
  assert.notEqual((await queue.add('t', {}, { deduplication: { id: 'again', ttl: TTL } })).id, throttled.id);
});

test('the sweep lists no shard whose listing could pass the packet limit; it reports it and sweeps the others', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'crowded');
  await store.init();
  const crowded = `${store.layout.dedupDir}/00`;
  await store.session.ensurePath(crowded);
  const data = Buffer.from(JSON.stringify({ job: 'gone', ttl: 1 }));
  const names = Array.from({ length: DEDUP_LISTING_MAX + 1 }, (_, i) => `d-k${i}`);
  for (let i = 0; i < names.length; i += 1000) {
    await store.session.multi(names.slice(i, i + 1000).map((n) => ({ op: 'create', path: `${crowded}/${n}`, data })));
  }
  const queue = new Queue('crowded', env);
  t.after(() => queue.close());
  await queue.add('t', {}, { deduplication: { id: 'elsewhere', ttl: 1 } });
  assert.notEqual(store.layout.dedupShard('elsewhere'), crowded);
  await serverTimePasses(store, 2);
  const sweep = await sweepDedupKeys(store, () => []);
  assert.deepEqual(sweep, { deleted: 1, crowded: [crowded] });
  assert.equal((await store.session.exists(crowded))?.numChildren, DEDUP_LISTING_MAX + 1, 'left for a later sweep');
  await store.session.deleteRecursive(crowded);
});

test('the sweep goes a few shards a pass, each pass from where the last one ended', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'paced');
  const queue = new Queue('paced', env);
  t.after(() => queue.close());
  const ids = Array.from({ length: 12 }, (_, i) => `paced-${i}`);
  await queue.addBulk(ids.map((id) => ({ name: 't', data: {}, opts: { deduplication: { id, ttl: 1 } } })));
  const shards = [...new Set(ids.map((id) => store.layout.dedupShard(id)))].sort();
  assert.ok(shards.length > 4, 'the keys spread over several shards');
  await serverTimePasses(store, 2);
  let from: string | undefined;
  let passes = 0;
  do {
    const before = await keyCount(store);
    const sweep = await sweepDedupKeys(store, () => [], { from, shards: 2 });
    passes++;
    const swept = shards.slice((passes - 1) * 2, passes * 2);
    const inThem = ids.filter((id) => swept.includes(store.layout.dedupShard(id))).length;
    assert.equal(sweep.deleted, inThem, `pass ${passes} swept its two shards`);
    assert.equal(await keyCount(store), before - inThem);
    from = sweep.next;
    if (from !== undefined) assert.equal(`${store.layout.dedupDir}/${from}`, shards[passes * 2]);
  } while (from !== undefined);
  assert.equal(passes, Math.ceil(shards.length / 2));
  assert.equal(await keyCount(store), 0);
  assert.deepEqual(await store.children(store.layout.dedupDir), [], 'the shards swept empty went');
});
