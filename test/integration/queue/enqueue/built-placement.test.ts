/**
 * Where an added record lands and what it logs, for each way a job is
 * added: a plain add (pipelined, delayed, with a priority, lifo), an add
 * replacing a delayed kept job, and the parked job of a keepLastIfActive key
 * added when the kept job completes or fails for good. Each job must be in
 * its lane (or delayed until its due time), run once, in lane order, and log
 * `added` with one `waiting` or `delayed` (its due time).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { cleanups } from '../../../helpers/cleanups.js';
import { type QueueTestEnv, queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

type Data = { tag: string };
type Logged = { event: string; jobId: string; delay?: number; other?: string };

/** Follows the queue's log: every added, waiting, delayed, removed and deduplicated event, in order. */
async function follow(env: QueueTestEnv, name: string, defer: (fn: () => unknown) => void): Promise<Logged[]> {
  const events = new QueueEvents(name, env);
  defer(() => events.close());
  await events.waitUntilReady();
  const log: Logged[] = [];
  events.on('added', ({ jobId }) => log.push({ event: 'added', jobId }));
  events.on('waiting', ({ jobId }) => log.push({ event: 'waiting', jobId }));
  events.on('delayed', ({ jobId, delay }) => log.push({ event: 'delayed', jobId, delay }));
  events.on('removed', ({ jobId }) => log.push({ event: 'removed', jobId }));
  events.on('deduplicated', ({ jobId, deduplicatedJobId }) =>
    log.push({ event: 'deduplicated', jobId, other: deduplicatedJobId }),
  );
  return log;
}

const of = (log: Logged[], id: string) => log.filter((e) => e.jobId === id).map((e) => e.event);

/** A gate a processor waits at until the test opens it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

/**
 * A worker (concurrency 1) whose first job, the kept one, waits at a gate
 * and then completes or throws, and whose other jobs wait for `hold`;
 * every job it starts is appended to `ran`.
 */
function keptWorker(
  env: QueueTestEnv,
  name: string,
  fails: boolean,
  defer: (fn: () => unknown) => void,
  hold?: Promise<void>,
) {
  const started = gate();
  const release = gate();
  const ran: string[] = [];
  const worker = new Worker<Data>(
    name,
    async (job) => {
      ran.push(job.data.tag);
      if (job.data.tag === 'kept') {
        started.open();
        await release.wait;
        if (fails) throw new Error('kept fails');
      } else await hold;
    },
    { ...env, concurrency: 1 },
  );
  defer(() => worker.close());
  return { worker, started, release, ran };
}

for (const fails of [false, true]) {
  const how = fails ? 'fails' : 'completes';
  for (const [lane, parkedOpts] of [
    ['a priority', { priority: 5 }],
    ['lifo', { lifo: true }],
  ] as const) {
    test(`keepLastIfActive: a parked job with ${lane}, added as the kept job ${how}, waits in its lane`, async (t) => {
      const defer = cleanups(t);
      const env = await queueEnv(t);
      const name = `lane-${how}-${'priority' in parkedOpts ? 'p' : 'l'}`;
      const log = await follow(env, name, defer);
      const queue = new Queue<Data>(name, env);
      defer(() => queue.close());
      // the first job after the kept one waits at `hold`, so the rest stay where the adds put them
      const hold = gate();
      const { worker, started, release, ran } = keptWorker(env, name, fails, defer, hold.wait);
      defer(() => hold.open());

      const p = { deduplication: { id: 'k', keepLastIfActive: true } };
      const q = { deduplication: { id: 'k2', keepLastIfActive: true } };
      const kept = await queue.add('j', { tag: 'kept' }, p);
      await started.wait;
      await queue.add('j', { tag: 'plain' });
      await queue.add('j', { tag: 'p10' }, { priority: 10 });
      await queue.add('j', { tag: 'p1' }, { priority: 1 });
      await queue.add('j', { tag: 'lifo' }, { lifo: true });
      // two duplicates: the latest is parked, the earlier one dropped
      assert.equal((await queue.add('j', { tag: 'dropped' }, { ...p, jobId: 'dropped', priority: 2 })).id, kept.id);
      assert.equal((await queue.add('j', { tag: 'parked' }, { ...p, ...parkedOpts, jobId: 'parked' })).id, kept.id);
      assert.equal(await queue.getJob('parked'), undefined, 'parked, not added yet');
      // a second key, whose kept job is not running: its duplicate is deduplicated, never parked
      const idle = await queue.add('j', { tag: 'idle' }, { ...q, priority: 20 });
      assert.equal((await queue.add('j', { tag: 'never' }, { ...q, jobId: 'never', lifo: true })).id, idle.id);

      release.open();
      // the worker may start its next job before the kept one's finish (and the hand-off) is stored
      await waitFor(() => ran.length === 2, { what: 'the next job to start' });
      const final = fails ? 'failed' : 'completed';
      await waitFor(async () => (await queue.getJobState(kept.id)) === final, { what: `the kept job ${final}` });
      const parked = await queue.getJob('parked');
      assert.equal(parked?.data.tag, 'parked');
      if (ran[1] !== 'parked') {
        assert.equal(await queue.getJobState('parked'), 'priority' in parkedOpts ? 'prioritized' : 'waiting');
      }
      assert.equal(parked?.priority, 'priority' in parkedOpts ? 5 : 0);
      assert.equal(parked?.opts.lifo, 'lifo' in parkedOpts ? true : undefined);
      assert.equal(await queue.getDeduplicationJobId('k'), 'parked');
      const closing = worker.close();
      hold.open();
      await closing;

      // a fresh worker (a fresh view of the head) runs the rest in lane order
      const rest: string[] = [];
      const next = new Worker<Data>(name, async (job) => void rest.push(job.data.tag), { ...env, concurrency: 1 });
      defer(() => next.close());
      const order =
        'priority' in parkedOpts
          ? ['lifo', 'plain', 'p1', 'parked', 'p10', 'idle']
          : ['parked', 'lifo', 'plain', 'p1', 'p10', 'idle'];
      const expected = order.filter((tag) => tag !== ran[1]);
      await waitFor(() => rest.length === expected.length, { what: 'the rest to run' });
      assert.deepEqual(rest, expected);
      assert.equal(await queue.getJobState('parked'), 'completed');
      assert.equal(await queue.getJob('dropped'), undefined);
      assert.equal(await queue.getJob('never'), undefined);
      await waitFor(() => of(log, 'parked').length >= 2, { what: "the parked job's events" });
      assert.deepEqual(of(log, 'parked'), ['added', 'waiting']);
      assert.deepEqual(
        log.filter((e) => e.event === 'deduplicated').map((e) => [e.jobId, e.other]),
        [
          [kept.id, 'dropped'],
          [kept.id, 'parked'],
          [idle.id, 'never'],
        ],
      );
      await waitFor(async () => (await queue.getDeduplicationJobId('k')) === null, { what: 'key k released' });
    });
  }

  test(`keepLastIfActive: a parked job with a delay and a priority, added as the kept job ${how}, is delayed from then and keeps its lane`, async (t) => {
    const defer = cleanups(t);
    const env = await queueEnv(t);
    const name = `delay-${how}`;
    const log = await follow(env, name, defer);
    const queue = new Queue<Data>(name, env);
    defer(() => queue.close());
    const { worker, started, release, ran } = keptWorker(env, name, fails, defer);

    const p = { deduplication: { id: 'k', keepLastIfActive: true } };
    const kept = await queue.add('j', { tag: 'kept' }, p);
    await started.wait;
    const delay = 600_000;
    assert.equal((await queue.add('j', { tag: 'parked' }, { ...p, jobId: 'parked', delay, priority: 3 })).id, kept.id);
    const before = Date.now();
    release.open();
    await waitFor(async () => (await queue.getJobState('parked')) === 'delayed', { what: 'the parked job delayed' });
    await worker.close();
    const parked = await queue.getJob('parked');
    assert.equal(parked?.delay, delay);
    assert.equal(parked?.priority, 3);
    assert.ok((parked?.timestamp ?? 0) >= before, 'its delay counts from the hand-off');
    assert.equal(await queue.getDeduplicationJobId('k'), 'parked', 'the key keeps the parked job');
    assert.equal(await queue.getDelayedCount(), 1);
    assert.equal(await queue.getJobCountByTypes('waiting', 'prioritized'), 0);
    await waitFor(() => of(log, 'parked').length >= 2, { what: "the parked job's events" });
    assert.deepEqual(of(log, 'parked'), ['added', 'delayed']);
    const due = log.find((e) => e.jobId === 'parked' && e.event === 'delayed')?.delay ?? 0;
    // due on ZooKeeper's clock (same machine here): the hand-off's time plus the delay
    assert.ok(Math.abs(due - (parked?.timestamp ?? 0) - delay) < 5_000, `due ${due}`);

    // promoted, it waits in its priority lane among others
    await queue.add('j', { tag: 'p9' }, { priority: 9 });
    await queue.add('j', { tag: 'p1' }, { priority: 1 });
    await parked?.promote();
    assert.equal(await queue.getJobState('parked'), 'prioritized');
    const ran2: string[] = [];
    const next = new Worker<Data>(name, async (job) => void ran2.push(job.data.tag), { ...env, concurrency: 1 });
    defer(() => next.close());
    await waitFor(() => ran2.length === 3, { what: 'the waiting jobs to run' });
    assert.deepEqual(ran2, ['p1', 'parked', 'p9']);
    assert.deepEqual(ran, ['kept']);
    await waitFor(async () => (await queue.getDeduplicationJobId('k')) === null, { what: 'the key released' });
  });

  test(`keepLastIfActive: a parked job with a short delay, added as the kept job ${how}, runs once when due`, async (t) => {
    const defer = cleanups(t);
    const env = await queueEnv(t);
    const name = `due-${how}`;
    const log = await follow(env, name, defer);
    const queue = new Queue<Data>(name, env);
    defer(() => queue.close());
    const { started, release, ran } = keptWorker(env, name, fails, defer);
    const p = { deduplication: { id: 'k', keepLastIfActive: true } };
    const kept = await queue.add('j', { tag: 'kept' }, p);
    await started.wait;
    assert.equal((await queue.add('j', { tag: 'parked' }, { ...p, jobId: 'parked', delay: 300 })).id, kept.id);
    release.open();
    await waitFor(async () => (await queue.getJobState('parked')) === 'completed', { what: 'the parked job to run' });
    const parked = await queue.getJob('parked');
    assert.ok((parked?.processedOn ?? 0) - (parked?.timestamp ?? 0) >= 250, 'it ran once due');
    assert.deepEqual(ran, ['kept', 'parked']);
    await waitFor(() => of(log, 'parked').length >= 3, { what: "the parked job's events" });
    assert.deepEqual(of(log, 'parked'), ['added', 'delayed', 'waiting']);
  });
}

test('replace: a delayed kept job replaced by a delayed duplicate with a priority, and that one by a lifo duplicate without delay', async (t) => {
  const defer = cleanups(t);
  const env = await queueEnv(t);
  const name = 'replace-lanes';
  const log = await follow(env, name, defer);
  const queue = new Queue<Data>(name, env);
  defer(() => queue.close());
  const r = { deduplication: { id: 'r', replace: true } };

  const a = await queue.add('j', { tag: 'a' }, { ...r, delay: 600_000 });
  const b = await queue.add('j', { tag: 'b' }, { ...r, delay: 300_000, priority: 4 });
  assert.notEqual(b.id, a.id);
  assert.equal(await queue.getJob(a.id), undefined);
  assert.equal(await queue.getJobState(b.id), 'delayed');
  assert.equal((await queue.getJob(b.id))?.delay, 300_000);
  assert.equal(await queue.getDelayedCount(), 1);

  await queue.add('j', { tag: 'plain' });
  const c = await queue.add('j', { tag: 'c' }, { ...r, lifo: true });
  assert.notEqual(c.id, b.id);
  assert.equal(await queue.getJob(b.id), undefined);
  assert.equal(await queue.getJobState(c.id), 'waiting');
  assert.equal(await queue.getDelayedCount(), 0);
  // c is waiting now: a further duplicate is deduplicated to it, no event (BullMQ's replace)
  assert.equal((await queue.add('j', { tag: 'd' }, { ...r, delay: 10 })).id, c.id);

  await waitFor(() => of(log, c.id).length >= 2 && of(log, b.id).length >= 4, { what: 'the events' });
  assert.deepEqual(of(log, a.id), ['added', 'delayed', 'removed']);
  assert.deepEqual(of(log, b.id), ['deduplicated', 'added', 'delayed', 'removed']);
  assert.deepEqual(of(log, c.id), ['deduplicated', 'added', 'waiting']);
  const dedups = log.filter((e) => e.event === 'deduplicated').map((e) => [e.jobId, e.other]);
  assert.deepEqual(dedups, [
    [b.id, a.id],
    [c.id, b.id],
  ]);
  const bDue = log.find((e) => e.jobId === b.id && e.event === 'delayed')?.delay ?? 0;
  assert.ok(Math.abs(bDue - b.timestamp - 300_000) < 5_000, `due ${bDue}`);

  const ran: string[] = [];
  const worker = new Worker<Data>(name, async (job) => void ran.push(job.data.tag), { ...env, concurrency: 1 });
  defer(() => worker.close());
  await waitFor(() => ran.length === 2, { what: 'the waiting jobs to run' });
  assert.deepEqual(ran, ['c', 'plain'], 'the lifo replacement first');
});

test('pipelined adds: delayed, prioritized, lifo and stale-key take-overs land in their places, each logged once', async (t) => {
  const defer = cleanups(t);
  const env = await queueEnv(t);
  const name = 'pipelined-places';
  const queue = new Queue<Data>(name, env);
  defer(() => queue.close());
  // stale keys: throttle keys of 1 ms that ran out (their jobs stay delayed, out of the way)
  for (const id of ['s0', 's1', 's2']) {
    await queue.add('j', { tag: `old-${id}` }, { deduplication: { id, ttl: 1 }, delay: 900_000 });
  }
  for (const id of ['s0', 's1', 's2']) {
    await waitFor(async () => (await queue.getDeduplicationJobId(id)) === null, { what: `key ${id} to run out` });
  }
  const log = await follow(env, name, defer);
  const kinds = [
    {},
    { delay: 600_000 },
    { priority: 7 },
    { lifo: true },
    { delay: 400_000, priority: 2 },
    { deduplication: { id: 's0', ttl: 60_000 }, priority: 3 },
    { deduplication: { id: 's1', ttl: 60_000 }, delay: 500_000 },
    { deduplication: { id: 's2', ttl: 60_000 }, lifo: true },
    { deduplication: { id: 'f0' }, priority: 3 },
    { deduplication: { id: 's0' }, lifo: true },
  ];
  const calls: Promise<unknown>[] = [];
  const tags: string[] = [];
  for (let i = 0; i < 40; i++) {
    const opts = kinds[i % kinds.length] as Record<string, unknown>;
    const tag = `t${i}`;
    tags.push(tag);
    calls.push(
      i % 7 === 3
        ? queue.addBulk([
            { name: 'j', data: { tag }, opts },
            { name: 'j', data: { tag: `${tag}b` }, opts: kinds[(i + 1) % kinds.length] as Record<string, unknown> },
          ])
        : queue.add('j', { tag }, opts),
    );
  }
  await Promise.all(calls);
  const all = await queue.getJobs(['waiting', 'prioritized', 'delayed'], 0, -1);
  const jobs = all.filter((j) => !j.data.tag.startsWith('old-'));
  const byTag = new Map(jobs.map((j) => [j.data.tag, j]));
  assert.equal(byTag.size, jobs.length, 'each stored once');
  for (const job of jobs) {
    const state = await queue.getJobState(job.id);
    const o = job.opts as { delay?: number; priority?: number; lifo?: boolean };
    const want = (o.delay ?? 0) > 0 ? 'delayed' : (o.priority ?? 0) > 0 && !o.lifo ? 'prioritized' : 'waiting';
    assert.equal(state, want, `${job.data.tag} (${JSON.stringify(o)})`);
    await waitFor(() => of(log, job.id).length >= 2, { what: `${job.data.tag}'s events` });
    const events = of(log, job.id).filter((e) => e !== 'deduplicated');
    assert.deepEqual(events, ['added', want === 'delayed' ? 'delayed' : 'waiting'], job.data.tag);
    if (want === 'delayed') {
      const due = log.find((e) => e.jobId === job.id && e.event === 'delayed')?.delay ?? 0;
      assert.ok(Math.abs(due - job.timestamp - (o.delay ?? 0)) < 5_000, `${job.data.tag} due ${due}`);
    }
  }
  // the keys were taken by the first add meeting each, in call order: s0 and s1 and s2 by t5, t6, t7; f0 by t8
  assert.equal(byTag.get('t5')?.id, await queue.getDeduplicationJobId('s0'));
  assert.equal(byTag.get('t6')?.id, await queue.getDeduplicationJobId('s1'));
  assert.equal(byTag.get('t7')?.id, await queue.getDeduplicationJobId('s2'));
  assert.equal(byTag.get('t8')?.id, await queue.getDeduplicationJobId('f0'));
  // ready jobs run in lane order: lifo newest first, then priority 0 in call order, then by priority
  const ready = jobs.filter((j) => (j.opts.delay ?? 0) === 0);
  const lane = (j: (typeof jobs)[number]) => (j.opts.lifo ? -1 : (j.opts.priority ?? 0));
  const order = (j: (typeof jobs)[number]) =>
    tags.indexOf(j.data.tag.replace(/b$/, '')) * 2 + (j.data.tag.endsWith('b') ? 1 : 0);
  const expected = [...ready]
    .sort((x, y) => lane(x) - lane(y) || (lane(x) === -1 ? order(y) - order(x) : order(x) - order(y)))
    .map((j) => j.data.tag);
  const ran: string[] = [];
  const worker = new Worker<Data>(name, async (job) => void ran.push(job.data.tag), { ...env, concurrency: 1 });
  defer(() => worker.close());
  await waitFor(() => ran.length === expected.length, { what: 'the ready jobs to run' });
  assert.deepEqual(ran, expected);
  assert.equal(await queue.getDelayedCount(), all.length - ready.length);
});
