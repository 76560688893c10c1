/**
 * BullMQ's QueueEvents and QueueEventsProducer on the ZooKeeper backend:
 * every event a job goes through reaches a QueueEvents of another session
 * with BullMQ's arguments; a reader resuming from an id gets exactly the
 * later events; `$` means what comes after the QueueEvents started; custom
 * events; trimming; reads that block on a watch and end on close.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend, type ZooKeeperQueueBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { expire, waitFor } from '../../helpers/zk.js';

const { Queue, Worker, QueueEvents, QueueEventsProducer } = withBackend(createZooKeeperBackend);

type Seen = { event: string; args: Record<string, unknown>; id: string };

/** Records every `names` event a QueueEvents emits, in order. */
function collect(qe: { on(event: string, fn: (...a: any[]) => void): unknown }, names: string[]): Seen[] {
  const seen: Seen[] = [];
  for (const event of names)
    qe.on(event, (args: Record<string, unknown>, id: string) => seen.push({ event, args, id }));
  return seen;
}

/** Stream ids in order: `<seq>-<n>` compared as numbers. */
function before(a: string, b: string): boolean {
  const [as, an] = a.split('-').map(Number) as [number, number];
  const [bs, bn] = b.split('-').map(Number) as [number, number];
  return as < bs || (as === bs && an < bn);
}

const JOB_EVENTS = ['added', 'waiting', 'active', 'progress', 'completed', 'failed', 'delayed', 'removed'];

test('a QueueEvents of another session sees every event of a job, with BullMQ arguments, in stream order', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('ev', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen = collect(events, JOB_EVENTS);
  const perJob: unknown[] = [];
  const queue = new Queue('ev', { connection });
  t.after(() => queue.close());

  const ok = await queue.add('ok', { n: 1 });
  // BullMQ also emits `<event>:<jobId>` (what Job.waitUntilFinished listens to)
  (events as unknown as { on(event: string, fn: (args: unknown) => void): void }).on(`completed:${ok.id}`, (args) =>
    perJob.push(args),
  );
  const bad = await queue.add('bad', { n: 2 });
  const later = await queue.add('later', {}, { delay: 60_000 });
  const worker = new Worker(
    'ev',
    async (job) => {
      if (job.name === 'bad') throw new Error('boom');
      await job.updateProgress({ pct: 50 });
      return { answer: 42 };
    },
    { connection },
  );
  t.after(() => worker.close());
  await waitFor(() => seen.some((s) => s.event === 'failed') && seen.some((s) => s.event === 'completed'), {
    what: 'completed and failed events',
  });
  await later.remove();
  await waitFor(() => seen.some((s) => s.event === 'removed'), { what: 'the removed event' });

  const of = (event: string, jobId: string | undefined) =>
    seen.find((s) => s.event === event && s.args.jobId === jobId);
  assert.deepEqual(of('added', ok.id)?.args, { jobId: ok.id, name: 'ok' });
  assert.deepEqual(of('waiting', ok.id)?.args, { jobId: ok.id });
  assert.deepEqual(of('active', ok.id)?.args, { jobId: ok.id, prev: 'waiting' });
  assert.deepEqual(of('progress', ok.id)?.args, { jobId: ok.id, data: { pct: 50 } });
  assert.deepEqual(of('completed', ok.id)?.args, { jobId: ok.id, returnvalue: { answer: 42 }, prev: 'active' });
  assert.deepEqual(of('failed', bad.id)?.args, { jobId: bad.id, failedReason: 'boom', prev: 'active' });
  const delayed = of('delayed', later.id)?.args;
  assert.equal(typeof delayed?.delay, 'number');
  // the due time, on ZooKeeper's clock: within the estimate of that clock of the local add time + 60 s
  // (a relative delay would be 60,000)
  const due = (later.timestamp as number) + 60_000;
  assert.ok(Math.abs((delayed?.delay as number) - due) < 5_000, `delay ${delayed?.delay} is the due time ${due}`);
  assert.deepEqual(of('removed', later.id)?.args, { jobId: later.id, prev: 'delayed' });
  assert.deepEqual(perJob, [{ jobId: ok.id, returnvalue: { answer: 42 }, prev: 'active' }]);

  const order = ['added', 'waiting', 'active', 'progress', 'completed'].map((e) => of(e, ok.id)?.id as string);
  for (let i = 1; i < order.length; i++) assert.ok(before(order[i - 1] as string, order[i] as string), order.join(' '));
  for (let i = 1; i < seen.length; i++) assert.ok(before((seen[i - 1] as Seen).id, (seen[i] as Seen).id));
});

test('a QueueEvents resuming from an id gets exactly the later events; from 0, all of them', async (t) => {
  const { connection } = await bullEnv(t);
  const first = new QueueEvents('resume', { connection });
  t.after(() => first.close());
  await first.waitUntilReady();
  const all = collect(first, ['added', 'waiting']);
  const queue = new Queue('resume', { connection });
  t.after(() => queue.close());
  for (let i = 0; i < 5; i++) await queue.add(`j${i}`, { i });
  await queue.addBulk([
    { name: 'bulk1', data: {} },
    { name: 'bulk2', data: {} },
  ]);
  await waitFor(() => all.length === 14, { what: '14 events' });

  const from = (all[4] as Seen).id; // inside the log: the third job's added event
  const resumed = new QueueEvents('resume', { connection, lastEventId: from });
  t.after(() => resumed.close());
  const got = collect(resumed, ['added', 'waiting']);
  await waitFor(() => got.length === 9, { what: 'the 9 later events' });
  assert.deepEqual(got, all.slice(5));

  const mid = (all[12] as Seen).id; // inside the bulk's batch (one node of four events): one is left
  const inBatch = new QueueEvents('resume', { connection, lastEventId: mid });
  t.after(() => inBatch.close());
  const rest = collect(inBatch, ['added', 'waiting']);
  await waitFor(() => rest.length === 1, { what: 'the rest of the batch' });
  assert.deepEqual(rest, all.slice(13));

  const everything = new QueueEvents('resume', { connection, lastEventId: '0' });
  t.after(() => everything.close());
  const replay = collect(everything, ['added', 'waiting']);
  await waitFor(() => replay.length === 14, { what: 'the whole log' });
  assert.deepEqual(replay, all);
});

test("'$' means what is logged after the QueueEvents started", async (t) => {
  const { connection } = await bullEnv(t);
  const keeper = new QueueEvents('now', { connection });
  t.after(() => keeper.close());
  await keeper.waitUntilReady();
  const queue = new Queue('now', { connection });
  t.after(() => queue.close());
  const old = await queue.add('old', {});
  const late = new QueueEvents('now', { connection });
  t.after(() => late.close());
  await late.waitUntilReady();
  const seen = collect(late, ['added']);
  const fresh = await queue.add('fresh', {});
  await waitFor(() => seen.length > 0, { what: 'an added event' });
  assert.deepEqual(
    seen.map((s) => s.args.jobId),
    [fresh.id],
  );
  assert.notEqual(old.id, fresh.id);
});

test('after obliterate the same Queue adds again, and a QueueEvents left open follows the new log from its start', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('again', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const added = collect(events, ['added']);
  const queue = new Queue('again', { connection });
  t.after(() => queue.close());
  await queue.add('before', {});
  await queue.add('before', {});
  await waitFor(() => added.length === 2, { what: 'two added events' });
  await queue.obliterate();
  const after = await queue.add('after', {}); // ids start again too, as in a new queue
  assert.equal(await after.getState(), 'waiting');
  await waitFor(() => added.length === 3, { what: 'the added event of the new queue' });
  assert.deepEqual(added[2]?.args, { jobId: after.id, name: 'after' });
});

test('after its session expires, a QueueEvents registers again and events flow again', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('expiry', { connection });
  t.after(() => events.close());
  await events.waitUntilReady();
  const added = collect(events, ['added']);
  const queue = new Queue('expiry', { connection });
  t.after(() => queue.close());
  await queue.add('before', {});
  await waitFor(() => added.length === 1, { what: 'the first added event' });
  const backend = events.getBackend() as unknown as ZooKeeperQueueBackend;
  await expire(await backend.ctx.shared.get());
  // events logged while nobody was registered are lost (as documented): add until one is seen
  const ids: string[] = [];
  await waitFor(
    async () => {
      ids.push((await queue.add('after', {})).id as string);
      return added.length > 1;
    },
    { intervalMs: 100, what: 'events after the expiry' },
  );
  assert.ok(ids.includes(added[1]?.args.jobId as string));
});

test('QueueEventsProducer: custom events are logged even with nobody listening, values as strings', async (t) => {
  const { connection } = await bullEnv(t);
  const producer = new QueueEventsProducer('custom', { connection });
  t.after(() => producer.close());
  await producer.publishEvent({ eventName: 'example', custom: 'before', n: 1 });
  const events = new QueueEvents('custom', { connection, autorun: false, lastEventId: '0-0' });
  t.after(() => events.close());
  await events.waitUntilReady();
  const seen = collect(events, ['example']);
  await producer.publishEvent({ eventName: 'example', custom: 'after', n: 2 });
  void events.run();
  await waitFor(() => seen.length === 2, { what: 'two custom events' });
  assert.deepEqual(
    seen.map((s) => s.args),
    [
      { custom: 'before', n: '1' },
      { custom: 'after', n: '2' },
    ],
  );
});

test('trimming: Queue.trimEvents and publishEvent maxEvents keep the newest entries', async (t) => {
  const { connection } = await bullEnv(t);
  const producer = new QueueEventsProducer('trim', { connection });
  t.after(() => producer.close());
  for (let i = 0; i < 10; i++) await producer.publishEvent({ eventName: 'tick', i }, 3);
  const queue = new Queue('trim', { connection });
  t.after(() => queue.close());

  const kept = new QueueEvents('trim', { connection, lastEventId: '0' });
  t.after(() => kept.close());
  const ticks = collect(kept, ['tick']);
  await waitFor(() => ticks.some((s) => s.args.i === '9'), { what: 'the newest tick' });
  assert.ok(ticks.length >= 3 && ticks.length < 10, `kept ${ticks.length} of 10`);

  assert.ok((await queue.trimEvents(1)) > 0);
  assert.ok((await queue.trimEvents(0)) === 1);
  await producer.publishEvent({ eventName: 'tick', i: 'last' });
  const after = new QueueEvents('trim', { connection, lastEventId: '0' });
  t.after(() => after.close());
  const left = collect(after, ['tick']);
  await waitFor(() => left.length > 0, { what: 'the tick after trimming' });
  assert.deepEqual(
    left.map((s) => s.args.i),
    ['last'],
  );
});

test('readEvents blocks on a watch: null on timeout, woken by a new event, ended by close', async (t) => {
  const { connection } = await bullEnv(t);
  const reader = createZooKeeperBackend('block', { connection }, { blocking: true });
  const writer = createZooKeeperBackend('block', { connection });
  t.after(() => Promise.all([reader.close(), writer.close()]));
  await Promise.all([reader.waitUntilReady(), writer.waitUntilReady()]);

  assert.equal(await reader.readEvents('$', 50), null);
  const pending = reader.readEvents('$', 60_000);
  const id = await writer.publishEvent({ event: 'ping', k: 'v' }, 1000);
  const got = await pending;
  assert.deepEqual(got?.[0]?.[1], [[id, ['event', 'ping', 'k', 'v']]]);
  assert.equal(await reader.readEvents(id, 50), null, 'nothing after the last id');

  await assert.rejects(reader.readEvents('not-an-id', 50), { code: 'ZKQ_INVALID_ARGUMENT' });
  const forever = reader.readEvents(id, 0);
  await reader.close();
  assert.equal(await forever, null);
});
