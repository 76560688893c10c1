/**
 * Pause and resume storms while zkq's Workers and BullMQ's Worker (on the
 * backend) drain a queue, on the plain path and under a global concurrency:
 * no claim commits while the queue is paused (each claim's `active` event is
 * logged in its own transaction, so its node's czxid is the claim's zxid,
 * compared with the zxids of the pauses and resumes), every resume is
 * noticed (every job completes), and each job completes once.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { QueueLayout } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

const { Worker: BullWorker } = withBackend(createZooKeeperBackend);

async function storm(t: TestContext, name: string, globalConcurrency?: number, faults = false) {
  const env = await queueEnv(t, 20_000);
  // with faults, the workers reach ZooKeeper through a proxy whose connections are cut now and then
  const proxy = faults ? await TcpProxy.start(await sharedZooKeeper()) : undefined;
  const wenv = proxy ? { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } } : env;
  const queue = new Queue(name, env);
  const events = new QueueEvents(name, env);
  t.after(() => Promise.all([events.close(), queue.close()]));
  await events.waitUntilReady();
  if (globalConcurrency) await queue.setGlobalConcurrency(globalConcurrency);
  const completed = new Map<string, number>();
  const done = (id: string) => completed.set(id, (completed.get(id) ?? 0) + 1);
  const run = async () => sleep(Math.random() * 15);
  const workers = [0, 1, 2].map((i) => {
    const w = new Worker(name, run, { ...wenv, concurrency: 3, name: `w${i}` });
    w.on('completed', (job) => done(job.id as string));
    w.on('error', () => {});
    return w;
  });
  const bull = new BullWorker(name, run, {
    connection: { ...wenv.connection, namespace: env.prefix },
    concurrency: 2,
    drainDelay: 1,
  });
  bull.on('completed', (job) => done(job.id as string));
  bull.on('error', () => {});
  // the proxy goes last: workers closing through it still reach the server
  t.after(async () => {
    await Promise.all([...workers.map((w) => w.close(true)), bull.close(true)]);
    await proxy?.stop();
  });
  await Promise.all([...workers.map((w) => w.waitUntilReady()), bull.waitUntilReady()]);

  const session = await prefixSession(t, env);
  const layout = new QueueLayout(name);
  const pausedSpans: [number, number][] = [];
  const ids: string[] = [];
  for (let cycle = 0; cycle < 30; cycle++) {
    const batch = await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'j', data: { cycle, i } })));
    ids.push(...batch.map((j) => j.id as string));
    await sleep(Math.random() * 40);
    if (proxy && cycle % 2 === 0) proxy.cut();
    await queue.pause();
    const from = (await session.exists(layout.meta))?.mzxid as number;
    if (cycle % 3 === 0)
      ids.push(...(await queue.addBulk([{ name: 'p', data: { cycle } }])).map((j) => j.id as string));
    await sleep(Math.random() * 40);
    proxy?.restore();
    await queue.resume();
    const to = (await session.exists(layout.meta))?.mzxid as number;
    pausedSpans.push([from, to]);
  }
  await waitFor(() => ids.every((id) => completed.has(id)) || undefined, {
    what: `every job completed (${ids.filter((id) => !completed.has(id)).length} left)`,
    timeoutMs: 40_000,
  });
  assert.deepEqual(
    [...completed].filter(([, n]) => n > 1),
    [],
    'each job completed once',
  );
  // claims committed while paused: an `active` event logged inside a paused span
  const inPause: string[] = [];
  const log = await session.getChildren(layout.eventLog);
  for (const node of log) {
    const { data, stat } = await session.getData(`${layout.eventLog}/${node}`);
    const records = JSON.parse(data.toString()) as { event: string; jobId?: string }[];
    if (!records.some((r) => r.event === 'active')) continue;
    const span = pausedSpans.find(([from, to]) => stat.czxid > from && stat.czxid < to);
    if (span) inPause.push(`${node} (czxid ${stat.czxid} in ${span})`);
  }
  assert.deepEqual(inPause, [], 'no claim committed while the queue was paused');
}

test('pause/resume storm on the plain path: no claim while paused, every job done once', async (t) => {
  await storm(t, 'storm');
});

test('pause/resume storm under a global concurrency: no claim while paused, every job done once', async (t) => {
  await storm(t, 'storm-limited', 3);
});

test('pause/resume storm with connections cut: no claim while paused, every job done once', async (t) => {
  await storm(t, 'storm-faults', undefined, true);
});
