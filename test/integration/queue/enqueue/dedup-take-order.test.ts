/**
 * Pipelined adds keep their call order when one meets a deduplication key
 * that exists: a key no longer live (a throttle key whose ttl ran out: the
 * node stays until the next add with that id takes it over), several such
 * keys, one key met twice in one run, a live key (the add is deduplicated),
 * and a take-over that loses a race with another producer's. The add's
 * first transaction fails on the key's create; it reads the key and writes
 * in the same run of the group commit, at its place, so adds called after
 * it are stored after it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { type QueueTestEnv, queueEnv } from '../../../helpers/queue.js';
import { beforeNextClockRead } from '../../../helpers/session-faults.js';
import { waitFor } from '../../../helpers/zk.js';

type Data = { n: number };

/** A queue whose throttle keys `ids` each name a job added with them (n from 0), all run out. */
async function withStaleKeys(t: { after(fn: () => unknown): void }, env: QueueTestEnv, name: string, ids: string[]) {
  const queue = new Queue<Data>(name, env);
  t.after(() => queue.close());
  for (const [n, id] of ids.entries()) await queue.add('j', { n }, { deduplication: { id, ttl: 1 } });
  for (const id of ids) {
    await waitFor(async () => (await queue.getDeduplicationJobId(id)) === null, {
      timeoutMs: 5000,
      what: `key ${id} to run out`,
    });
  }
  return queue;
}

async function waiting(queue: Queue<Data>): Promise<number[]> {
  return (await queue.getJobs(['waiting'], 0, -1)).map((j) => j.data.n);
}

test('an add taking over a stale deduplication key, then a plain add, pipelined: they wait in call order', async (t) => {
  const env = await queueEnv(t);
  const queue = await withStaleKeys(t, env, 'dedup-take-order', ['throttle']);
  const taking = queue.add('j', { n: 1 }, { deduplication: { id: 'throttle', ttl: 60_000 } });
  const plain = queue.add('j', { n: 2 });
  assert.equal((await taking).id !== (await plain).id, true);
  assert.equal(await queue.getDeduplicationJobId('throttle'), (await taking).id, 'the add took the key over');
  assert.deepEqual(await waiting(queue), [0, 1, 2]);
});

test('several adds taking over stale keys among plain adds, custom ids and a bulk: all wait in call order', async (t) => {
  const env = await queueEnv(t);
  const keys = ['k0', 'k1', 'k2'];
  const queue = await withStaleKeys(t, env, 'dedup-take-many', keys);
  const take = (n: number, id: string) => queue.add('j', { n }, { deduplication: { id, ttl: 60_000 } });
  const adds = [
    take(3, 'k0'),
    queue.add('j', { n: 4 }),
    take(5, 'k1'),
    queue.add('j', { n: 6 }, { jobId: 'named' }),
    queue.addBulk([
      { name: 'j', data: { n: 7 }, opts: { deduplication: { id: 'k2', ttl: 60_000 } } },
      { name: 'j', data: { n: 8 } },
    ]),
    queue.add('j', { n: 9 }),
  ];
  const jobs = (await Promise.all(adds)).flat();
  assert.deepEqual(await waiting(queue), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  for (const [i, id] of keys.entries()) {
    const taker = jobs.find((j) => j.data.n === 3 + 2 * i);
    assert.equal(await queue.getDeduplicationJobId(id), taker?.id, `the add took key ${id} over`);
  }
});

test('two adds meeting one stale key in one run: the first takes it, the second is deduplicated to it, order kept', async (t) => {
  const env = await queueEnv(t);
  const queue = await withStaleKeys(t, env, 'dedup-take-twice', ['throttle']);
  const opts = { deduplication: { id: 'throttle', ttl: 60_000 } };
  const [first, second, plain] = await Promise.all([
    queue.add('j', { n: 1 }, opts),
    queue.add('j', { n: 2 }, opts),
    queue.add('j', { n: 3 }),
  ]);
  assert.equal(second.id, first.id, 'the second add answers with the job that took the key');
  assert.notEqual(plain.id, first.id);
  assert.equal(await queue.getDeduplicationJobId('throttle'), first.id);
  assert.deepEqual(await waiting(queue), [0, 1, 3]);
});

test('an add meeting a live key is deduplicated; the adds around it wait in call order', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue<Data>('dedup-live-order', env);
  t.after(() => queue.close());
  const kept = await queue.add('j', { n: 0 }, { deduplication: { id: 'live', ttl: 60_000 } });
  const [before, dup, after] = await Promise.all([
    queue.add('j', { n: 1 }),
    queue.add('j', { n: 2 }, { deduplication: { id: 'live', ttl: 60_000 } }),
    queue.add('j', { n: 3 }),
  ]);
  assert.equal(dup.id, kept.id);
  assert.notEqual(before.id, after.id);
  assert.deepEqual(await waiting(queue), [0, 1, 3]);
});

test('a take-over that loses the race for the key to another producer is deduplicated to its job; order kept', async (t) => {
  const env = await queueEnv(t);
  const queue = await withStaleKeys(t, env, 'dedup-take-race', ['throttle']);
  const other = new Queue<Data>('dedup-take-race', env);
  t.after(() => other.close());
  const opts = { deduplication: { id: 'throttle', ttl: 60_000 } };
  // the other producer takes the key over after this one read it stale, before this one writes
  let rival: { id: string } | undefined;
  beforeNextClockRead(await queue.client, 'dedup-take-race', async () => {
    rival = await other.add('j', { n: 1 }, opts);
  });
  const [taking, plain] = await Promise.all([queue.add('j', { n: 2 }, opts), queue.add('j', { n: 3 })]);
  assert.ok(rival, 'the other producer added first');
  assert.equal(taking.id, rival.id, 'the add that lost answers with the job that took the key');
  assert.notEqual(plain.id, rival.id);
  assert.equal(await queue.getDeduplicationJobId('throttle'), rival.id);
  assert.deepEqual(await waiting(queue), [0, 1, 3]);
});
