/**
 * A deduplication key is deleted (by its job's finish or removal, or by the
 * sweep) and created again by a newer add: its new node starts again at
 * version 0, so a write planned from a read of the old node at version 0
 * would pass its version check and hit the new one. Each test makes the old
 * key go and a newer job take the key between a reader's read and its
 * write, at the session's request boundary, and checks that the newer job
 * keeps its key: an add is deduplicated to it, the sweep and removals leave
 * it alone. The last test races the same without any hook: producers adding
 * one id while its jobs complete and the sweep runs (two of its jobs ran at
 * once before keys were fenced this way).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { openSession, QueueLayout, QueueStore, sweepDedupKeys } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { FaultProxy, OP, request } from '../../helpers/fault-proxy.js';
import { heldWorker } from '../../helpers/held-worker.js';
import { type QueueTestEnv, queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

type Hooked = 'getData' | 'readMulti' | 'multi' | 'setData';
const METHODS = ['getData', 'readMulti', 'multi', 'setData', 'exists', 'getChildren', 'create', 'delete'] as const;

/**
 * The `nth` time `session` calls `method` (on `path`, or reading it, if
 * given), `action` runs before the request is sent; every later request of
 * the session waits until it is done, so requests still reach the server in
 * call order.
 */
function beforeFirst(session: Session, method: Hooked, action: () => Promise<unknown>, path?: string, nth = 1): void {
  const target = session as unknown as Record<(typeof METHODS)[number], (...args: unknown[]) => Promise<unknown>>;
  let running: Promise<unknown> | undefined;
  let seen = 0;
  for (const name of METHODS) {
    const original = target[name].bind(session);
    target[name] = async (...args: unknown[]) => {
      if (seen < nth && name === method && (path === undefined || reads(args[0], path)) && ++seen === nth) {
        running = action();
      }
      if (running) await running;
      return original(...args);
    };
  }
}

/** Whether a request's first argument is `path`, or a read-only multi's reads that read it. */
function reads(arg: unknown, path: string): boolean {
  return Array.isArray(arg) ? arg.some((r: { path?: string }) => r.path === path) : arg === path;
}

async function rawStore(t: { after: (fn: () => unknown) => void }, env: QueueTestEnv, queue: string) {
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  return new QueueStore(session, queue);
}

test('an add that read a key whose job then completed, while another add created the key again, is deduplicated to the newer job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('reuse-finish', env);
  const taker = new Queue('reuse-finish', env);
  t.after(() => queue.close());
  t.after(() => taker.close());
  const { worker, started, release } = heldWorker(t, env, 'reuse-finish');
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd' } });
  const firstId = first.id as string;
  await waitFor(() => started.includes(firstId), { what: 'the first job to run' });
  let newer: string | undefined;
  // the taker has read the key (it names the running job); before it reads that job, the job
  // completes (its finish deletes the key) and another add creates the key again
  beforeFirst(
    await taker.client,
    'readMulti',
    async () => {
      release();
      await waitFor(async () => (await queue.getJobState(firstId)) === 'completed', { what: 'the first job done' });
      await worker.close();
      newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd' } })).id;
    },
    new QueueLayout('reuse-finish').job(firstId),
  );
  // the taker's add is sent as a create of the key, which exists: it reads the key
  const late = await taker.add('j', { n: 2 }, { deduplication: { id: 'd' } });
  assert.notEqual(newer, firstId);
  assert.equal(late.id, newer, 'deduplicated to the job that holds the key');
  assert.equal(await queue.getDeduplicationJobId('d'), newer);
  assert.deepEqual(
    (await queue.getJobs(['waiting'], 0, -1)).map((j) => j.data.n),
    [1],
    'one job waits',
  );
});

test('an add that read a throttle key run out, while its job was removed and another add took the key again, is deduplicated to the newer job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('reuse-removed', env);
  const taker = new Queue('reuse-removed', env);
  t.after(() => queue.close());
  t.after(() => taker.close());
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd', ttl: 1 } });
  const firstId = first.id as string;
  await waitFor(async () => (await queue.getDeduplicationJobId('d')) === null, { what: 'the ttl to run out' });
  let newer: string | undefined;
  // the taker has read the key (run out, naming the first job); the first job is removed
  // with its key, and another add creates the key again with a long ttl
  beforeFirst(
    await taker.client,
    'readMulti',
    async () => {
      await queue.remove(firstId);
      newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd', ttl: 600_000 } })).id;
    },
    new QueueLayout('reuse-removed').job(firstId),
  );
  const late = await taker.add('j', { n: 2 }, { deduplication: { id: 'd', ttl: 600_000 } });
  assert.notEqual(newer, firstId);
  assert.equal(late.id, newer, 'throttled by the newer key');
  assert.deepEqual(
    (await queue.getJobs(['waiting'], 0, -1)).map((j) => j.data.n),
    [1],
    'one job waits',
  );
});

test('the sweep leaves a key created again after its job completed (removed as it completed) while the sweep read the key', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'reuse-sweep');
  const queue = new Queue('reuse-sweep', env);
  t.after(() => queue.close());
  const { worker, started, release } = heldWorker(t, env, 'reuse-sweep');
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd' }, removeOnComplete: true });
  const firstId = first.id as string;
  await waitFor(() => started.includes(firstId), { what: 'the first job to run' });
  let newer: string | undefined;
  // the sweep has read the key (naming the running job); before it looks for that job, the job
  // completes and goes (with its key), and another add creates the key again
  beforeFirst(store.session, 'readMulti', async () => {
    release();
    await waitFor(async () => !(await queue.getJob(firstId)), { what: 'the first job gone' });
    await worker.close();
    newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd' } })).id;
  });
  await sweepDedupKeys(store, () => []);
  assert.notEqual(newer, firstId);
  assert.equal(await queue.getDeduplicationJobId('d'), newer, "the newer job's key stays");
  assert.equal((await queue.add('j', { n: 2 }, { deduplication: { id: 'd' } })).id, newer, 'and deduplicates');
});

test('the sweep leaves a throttle key created again after it judged the old one run out and before its delete', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'reuse-sweep-ttl');
  const queue = new Queue('reuse-sweep-ttl', env);
  t.after(() => queue.close());
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd', ttl: 1 } });
  const firstId = first.id as string;
  await waitFor(async () => (await queue.getDeduplicationJobId('d')) === null, { what: 'the ttl to run out' });
  let newer: string | undefined;
  // the sweep has judged the key run out; before its delete is sent, the first job is removed
  // with its key, and another add creates the key again with a long ttl
  beforeFirst(store.session, 'multi', async () => {
    await queue.remove(firstId);
    newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd', ttl: 600_000 } })).id;
  });
  await sweepDedupKeys(store, () => []);
  assert.notEqual(newer, firstId);
  assert.equal(await queue.getDeduplicationJobId('d'), newer, "the newer job's key stays");
  assert.equal((await queue.add('j', { n: 2 }, { deduplication: { id: 'd', ttl: 600_000 } })).id, newer);
});

test('an add that judged a throttle key run out, while the sweep deleted it and another add created it again, is deduplicated to the newer job', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'reuse-swept');
  const queue = new Queue('reuse-swept', env);
  const taker = new Queue('reuse-swept', env);
  t.after(() => queue.close());
  t.after(() => taker.close());
  await queue.add('j', { n: 1 }, { deduplication: { id: 'd', ttl: 1 } });
  await waitFor(async () => (await queue.getDeduplicationJobId('d')) === null, { what: 'the ttl to run out' });
  let newer: string | undefined;
  // the taker has read the key (run out) twice; as it asks ZooKeeper's time, the sweep deletes
  // the key and another add creates it again with a long ttl
  beforeFirst(
    await taker.client,
    'setData',
    async () => {
      assert.equal((await sweepDedupKeys(store, () => [])).deleted, 1);
      newer = (await queue.add('j', { n: 2 }, { deduplication: { id: 'd', ttl: 600_000 } })).id;
    },
    new QueueLayout('reuse-swept').clock,
  );
  const late = await taker.add('j', { n: 3 }, { deduplication: { id: 'd', ttl: 600_000 } });
  assert.equal(late.id, newer, 'throttled by the newer key');
  assert.equal(await queue.getDeduplicationJobId('d'), newer);
});

test('a removal that read its run-out throttle key, while the sweep deleted it and another add created it again, leaves the newer key', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'reuse-remove');
  const queue = new Queue('reuse-remove', env);
  const remover = new Queue('reuse-remove', env);
  t.after(() => queue.close());
  t.after(() => remover.close());
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd', ttl: 1 } });
  await waitFor(async () => (await queue.getDeduplicationJobId('d')) === null, { what: 'the ttl to run out' });
  let newer: string | undefined;
  // the removal has read the job and its key; before its transaction is sent, the sweep deletes
  // the key (run out) and another add creates it again with a long ttl
  beforeFirst(await remover.client, 'multi', async () => {
    assert.equal((await sweepDedupKeys(store, () => [])).deleted, 1);
    newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd', ttl: 600_000 } })).id;
  });
  assert.equal(await remover.remove(first.id as string), 1);
  assert.equal(await queue.getDeduplicationJobId('d'), newer, "the newer job's key stays");
  assert.equal((await queue.add('j', { n: 2 }, { deduplication: { id: 'd', ttl: 600_000 } })).id, newer);
});

test('a drain that read a run-out throttle key, while the sweep deleted it and another add created it again, removes its job and leaves the newer key', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'reuse-drain');
  const queue = new Queue('reuse-drain', env);
  const drainer = new Queue('reuse-drain', env);
  t.after(() => queue.close());
  t.after(() => drainer.close());
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd', ttl: 1 } });
  await waitFor(async () => (await queue.getDeduplicationJobId('d')) === null, { what: 'the ttl to run out' });
  let newer: string | undefined;
  beforeFirst(await drainer.client, 'multi', async () => {
    assert.equal((await sweepDedupKeys(store, () => [])).deleted, 1);
    newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd', ttl: 600_000 } })).id;
  });
  await drainer.drain();
  assert.equal(await queue.getJob(first.id as string), undefined, 'the drained job is gone');
  assert.equal(await queue.getDeduplicationJobId('d'), newer, "the newer job's key stays");
});

test('a finish that read its key, while the key was freed by hand and a newer add created it again, leaves the newer key', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('reuse-freed', env);
  t.after(() => queue.close());
  const { worker, started, release } = heldWorker(t, env, 'reuse-freed');
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'd' } });
  await waitFor(() => started.includes(first.id as string), { what: 'the first job to run' });
  let newer: string | undefined;
  // the finish has read the key (naming its job); before its transaction is sent, the key is
  // freed by hand and a newer add creates it again
  beforeFirst(await worker.client, 'multi', async () => {
    assert.equal(await queue.removeDeduplicationKey('d'), 1);
    newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd' }, delay: 600_000 })).id;
  });
  release();
  await waitFor(async () => (await queue.getJobState(first.id as string)) === 'completed', {
    what: 'the first job done',
  });
  assert.equal(await queue.getDeduplicationJobId('d'), newer, "the newer job's key stays");
});

test('a replace that read a delayed kept job, while the key was freed by hand and a newer add created it again, leaves the newer job its key', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('reuse-replace', env);
  const taker = new Queue('reuse-replace', env);
  t.after(() => queue.close());
  t.after(() => taker.close());
  const kept = await queue.add('j', { n: 0 }, { deduplication: { id: 'd' }, delay: 600_000 });
  let newer: string | undefined;
  // the taker's first transaction meets the key; before its second (the replace) is sent, the
  // key is freed by hand and a newer add creates it again
  beforeFirst(
    await taker.client,
    'multi',
    async () => {
      assert.equal(await queue.removeDeduplicationKey('d'), 1);
      newer = (await queue.add('j', { n: 1 }, { deduplication: { id: 'd' } })).id;
    },
    undefined,
    2,
  );
  const late = await taker.add('j', { n: 2 }, { deduplication: { id: 'd', replace: true }, delay: 600_000 });
  assert.notEqual(newer, kept.id);
  assert.equal(late.id, newer, 'deduplicated to the job that holds the key');
  assert.equal(await queue.getDeduplicationJobId('d'), newer);
});

test('adds with one id from three producers while jobs complete and the sweep runs: never two of its jobs at once, no key left', async (t) => {
  const env = await queueEnv(t);
  const store = await rawStore(t, env, 'reuse-storm');
  const producers = [0, 1, 2].map(() => new Queue('reuse-storm', env));
  for (const p of producers) t.after(() => p.close());
  let running = 0;
  let most = 0;
  let ran = 0;
  const worker = new Worker(
    'reuse-storm',
    async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 2));
      running--;
      ran++;
    },
    { ...env, concurrency: 4 },
  );
  t.after(() => worker.close());
  let adding = true;
  const sweeping = (async () => {
    while (adding) await sweepDedupKeys(store, () => []);
  })();
  const opts = { deduplication: { id: 'storm' }, removeOnComplete: true };
  await Promise.all(
    producers.map(async (p) => {
      for (let i = 0; i < 60; i++) await p.add('s', { i }, opts);
    }),
  );
  adding = false;
  await sweeping;
  const queue = producers[0] as Queue;
  await waitFor(async () => (await queue.count()) === 0 && (await queue.getActiveCount()) === 0, {
    what: 'every job run',
  });
  assert.ok(ran >= 1);
  assert.equal(most, 1, 'one job of the id at a time');
  await waitFor(async () => (await queue.getDeduplicationJobId('storm')) === null, { what: 'the last key deleted' });
  assert.deepEqual(await store.children(store.layout.dedupShard('storm')), [], 'no key left');
});

test('a finish whose reply is lost (the link cut as it committed) deletes its key once: the job ran once, and the id adds a job again', async (t) => {
  const env = await queueEnv(t);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const queue = new Queue('reuse-lost', env);
  t.after(() => queue.close());
  const runs = new Map<string, number>();
  const worker = new Worker(
    'reuse-lost',
    async (job) => {
      runs.set(job.id as string, (runs.get(job.id as string) ?? 0) + 1);
      return 'done';
    },
    { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } },
  );
  t.after(() => worker.close());
  // the finish's transaction deletes the key `d-lost-reply`: it applies, the worker never hears so
  const lost = proxy.loseReply(request(OP.multi, 'd-lost-reply'));
  const first = await queue.add('j', { n: 0 }, { deduplication: { id: 'lost-reply' } });
  await lost.fired;
  await waitFor(async () => (await queue.getJobState(first.id as string)) === 'completed', {
    timeoutMs: 30_000,
    what: 'the first job done',
  });
  assert.equal(await queue.getDeduplicationJobId('lost-reply'), null, 'its key went with the finish');
  const again = await queue.add('j', { n: 1 }, { deduplication: { id: 'lost-reply' } });
  assert.notEqual(again.id, first.id);
  await waitFor(async () => (await queue.getJobState(again.id as string)) === 'completed', {
    timeoutMs: 30_000,
    what: 'the second job done',
  });
  assert.deepEqual([runs.get(first.id as string), runs.get(again.id as string)], [1, 1], 'each ran once');
});
