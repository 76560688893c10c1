/**
 * Adds that meet a deduplication key and are settled against it in the
 * shared run of the group commit: many of them pipelined with plain adds,
 * custom ids and bulks, against a model of BullMQ's rules; and a take-over
 * whose transaction's reply is lost, which never reaches the server, or whose
 * session expires with its reply held: each add resolves once, with a job
 * that is stored once, and the waiting jobs keep call order.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, QueueEvents } from '@zkq/producer';
import { cleanups } from '../../helpers/cleanups.js';
import { FaultProxy, OP, request, type WireRequest } from '../../helpers/fault-proxy.js';
import { type QueueTestEnv, queueEnv } from '../../helpers/queue.js';
import { beforeNodeExistsReply } from '../../helpers/session-faults.js';
import { expire, waitFor } from '../../helpers/zk.js';

type Data = { n: number };

/** Adds one job with throttle key `id` (ttl 1 ms) per id, and waits until every key ran out. */
async function staleKeys(queue: Queue<Data>, ids: string[], first = 0): Promise<void> {
  for (const [i, id] of ids.entries()) await queue.add('j', { n: first + i }, { deduplication: { id, ttl: 1 } });
  for (const id of ids) {
    await waitFor(async () => (await queue.getDeduplicationJobId(id)) === null, {
      timeoutMs: 5000,
      what: `key ${id} to run out`,
    });
  }
}

async function waiting(queue: Queue<Data>): Promise<number[]> {
  return (await queue.getJobs(['waiting'], 0, -1)).map((j) => j.data.n);
}

/** The n-th request matching `match` (1 first). */
function nth(match: (r: WireRequest) => boolean, n: number) {
  let seen = 0;
  return (r: WireRequest) => match(r) && ++seen === n;
}

test('pipelined adds meeting stale, live and new keys (several per key, bulks, custom ids): the outcomes of BullMQ rules, in call order', async (t) => {
  const defer = cleanups(t);
  const env = await queueEnv(t);
  const queue = new Queue<Data>('dedup-mix', env);
  defer(() => queue.close());
  await staleKeys(queue, ['s0', 's1'], 0);
  await queue.add('j', { n: 2 }, { deduplication: { id: 'l0', ttl: 60_000 } });
  const live = (await queue.getDeduplicationJobId('l0')) as string;
  // the model: a key is kept by the first add (in call order) meeting it stale or missing
  const kept = new Map<string, number>([['l0', 2]]);
  const expected: number[] = [0, 1, 2];
  type Call = { kind: 'add'; n: number; key?: string; jobId?: string } | { kind: 'bulk'; items: Call[] };
  const calls: Call[] = [];
  let n = 3;
  const keys = ['s0', 's1', 'l0', 'f0', 'f1'];
  for (let i = 0; i < 40; i++) {
    const r = (i * 7 + 3) % 11;
    const item = (): Call => {
      const c: Call = { kind: 'add', n: n++ };
      if (r % 3 !== 0) c.key = keys[(i + r) % keys.length];
      if (r === 5) c.jobId = `named-${i}`;
      return c;
    };
    calls.push(r === 4 ? { kind: 'bulk', items: [item(), item(), item()] } : item());
  }
  const answers: Promise<unknown>[] = [];
  const want: { n: number; kept?: number }[] = [];
  const run = (c: Extract<Call, { kind: 'add' }>) => {
    const opts = {
      ...(c.key ? { deduplication: { id: c.key, ttl: 60_000 } } : {}),
      ...(c.jobId ? { jobId: c.jobId } : {}),
    };
    if (c.key && kept.has(c.key)) want.push({ n: c.n, kept: kept.get(c.key) });
    else {
      if (c.key) kept.set(c.key, c.n);
      expected.push(c.n);
      want.push({ n: c.n });
    }
    return { name: 'j', data: { n: c.n }, opts };
  };
  for (const c of calls) {
    if (c.kind === 'bulk') {
      const jobs = c.items.map((x) => run(x as Extract<Call, { kind: 'add' }>));
      answers.push(queue.addBulk(jobs));
    } else {
      const j = run(c);
      answers.push(queue.add(j.name, j.data, j.opts));
    }
  }
  const jobs = (await Promise.all(answers)).flat() as { id: string; data: Data }[];
  assert.deepEqual(await waiting(queue), expected, 'waiting in call order');
  const idOf = new Map<number, string>();
  for (const [i, w] of want.entries()) if (w.kept === undefined) idOf.set(w.n, (jobs[i] as { id: string }).id);
  idOf.set(2, live);
  for (const [i, w] of want.entries()) {
    const job = jobs[i] as { id: string };
    if (w.kept !== undefined) assert.equal(job.id, idOf.get(w.kept), `add ${w.n} deduplicated to add ${w.kept}`);
    else assert.ok(await queue.getJob(job.id), `add ${w.n} is stored`);
  }
  for (const [key, k] of kept) assert.equal(await queue.getDeduplicationJobId(key), idOf.get(k), `key ${key}`);
});

/** A take-over of stale key 'throttle' pipelined with a plain add, through `fault`; the checks after it. */
async function takeOverUnder(
  t: { name?: string; after(fn: () => unknown): void },
  fault: (proxy: FaultProxy, queue: Queue<Data>) => Promise<unknown>,
): Promise<void> {
  const defer = cleanups(t);
  const env: QueueTestEnv = await queueEnv(t, 4000);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  defer(() => proxy.stop());
  const reader = new Queue<Data>('dedup-fault', env);
  defer(() => reader.close());
  await staleKeys(reader, ['throttle'], 0);
  const queue = new Queue<Data>('dedup-fault', {
    ...env,
    connection: { ...env.connection, connectionString: proxy.connectionString },
  });
  defer(() => queue.close());
  await queue.waitUntilReady();
  const faulted = fault(proxy, queue);
  const opts = { deduplication: { id: 'throttle', ttl: 60_000 } };
  const [taking, second, plain] = await Promise.all([
    queue.add('j', { n: 1 }, opts),
    queue.add('j', { n: 2 }, opts),
    queue.add('j', { n: 3 }),
  ]);
  await faulted;
  assert.equal(second.id, taking.id, 'the second add is deduplicated to the first');
  assert.notEqual(plain.id, taking.id);
  assert.ok(await reader.getJob(taking.id), 'the job the take-over answered with is stored');
  assert.equal(await reader.getDeduplicationJobId('throttle'), taking.id);
  assert.deepEqual(await waiting(reader), [0, 1, 3]);
}

const takeOver = request(OP.multi, 'd-throttle');

test('a take-over whose reply is lost after it committed: read back, stored once, in call order', async (t) => {
  await takeOverUnder(t, async (proxy) => {
    const f = proxy.loseReply(nth(takeOver, 2));
    await f.fired;
  });
});

test('the first transaction of a take-over (its key create fails) loses its reply: stored once, in call order', async (t) => {
  await takeOverUnder(t, async (proxy) => {
    const f = proxy.loseReply(nth(takeOver, 1));
    await f.fired;
  });
});

test('a take-over cut before it reaches the server: sent again, stored once, in call order', async (t) => {
  await takeOverUnder(t, async (proxy) => {
    const f = proxy.cutBefore(nth(takeOver, 2), 200);
    await f.fired;
  });
});

test('a take-over applied whose session expires while its reply is held: read back, stored once, in call order', async (t) => {
  await takeOverUnder(t, async (proxy, queue) => {
    const f = proxy.delayReply(nth(takeOver, 2), 3000);
    await f.fired;
    await expire(await queue.client);
  });
});

test('pipelined duplicates of live and stale keys with a listener: one deduplicated event per add not added, naming the kept job', async (t) => {
  const defer = cleanups(t);
  const env = await queueEnv(t);
  const queue = new Queue<Data>('dedup-events', env);
  defer(() => queue.close());
  await staleKeys(queue, ['s'], 0);
  const kept = await queue.add('j', { n: 1 }, { deduplication: { id: 'l', ttl: 60_000 } });
  const events = new QueueEvents('dedup-events', env);
  defer(() => events.close());
  await events.waitUntilReady();
  const seen: { jobId: string; deduplicationId: string; deduplicatedJobId: string }[] = [];
  events.on('deduplicated', (args) => seen.push(args));
  const opts = (id: string) => ({ deduplication: { id, ttl: 60_000 } });
  const jobs = await Promise.all([
    queue.add('j', { n: 2 }, opts('l')),
    queue.add('j', { n: 3 }, opts('s')),
    queue.add('j', { n: 4 }, opts('s')),
    queue.add('j', { n: 5 }),
    queue.add('j', { n: 6 }, opts('l')),
  ]);
  const taker = jobs[1]?.id as string;
  assert.deepEqual(
    jobs.map((j) => j.id),
    [kept.id, taker, taker, jobs[3]?.id, kept.id],
  );
  await waitFor(() => seen.length >= 3, { timeoutMs: 5000, what: 'three deduplicated events' });
  assert.deepEqual(
    seen.map((e) => [e.jobId, e.deduplicationId]).sort(),
    [
      [kept.id, 'l'],
      [kept.id, 'l'],
      [taker, 's'],
    ].sort(),
  );
  assert.equal(new Set(seen.map((e) => e.deduplicatedJobId)).size, 3, 'each names the id not added');
  assert.deepEqual(await waiting(queue), [0, 1, 3, 5]);
});

test('close() as pipelined adds meet their keys: it resolves, and every add that resolved answers with a stored job', async (t) => {
  const defer = cleanups(t);
  const env = await queueEnv(t);
  const reader = new Queue<Data>('dedup-close', env);
  defer(() => reader.close());
  await staleKeys(reader, ['a', 'b', 'c'], 0);
  const queue = new Queue<Data>('dedup-close', env);
  let closing: Promise<void> | undefined;
  // the first transaction failed on a key: close as the take-overs are to be read and written
  beforeNodeExistsReply(await queue.client, async () => {
    closing = queue.close();
  });
  const adds = ['a', 'b', 'c', 'a'].flatMap((id, i) => [
    queue.add('j', { n: 10 + 2 * i }, { deduplication: { id, ttl: 60_000 } }),
    queue.add('j', { n: 11 + 2 * i }),
  ]);
  const settled = await Promise.allSettled(adds);
  assert.ok(closing, 'closed as a key was met');
  await closing;
  for (const [i, s] of settled.entries()) {
    if (s.status === 'fulfilled') assert.ok(await reader.getJob(s.value.id), `add ${i} answers with a stored job`);
  }
});
