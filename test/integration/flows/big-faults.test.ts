/**
 * What a flow written in several transactions leaves when its adder dies
 * midway, what removing a big flow leaves, and a parent whose dependency
 * node was written before buckets (entries right under it).
 *
 * - An adder killed midway: the parent, written first with every child
 *   counted pending, never runs while children run; the leader's tidy-up
 *   (releaseCutFlows) fails it without running it once the add's mark stayed
 *   unchanged, and the mark goes.
 * - A big flow removed (the parent, then its children's queue obliterated)
 *   leaves no node of it: the sweep deletes the parent's buckets too.
 * - An older parent's entries are settled where they are, read with the
 *   bucketed ones, and its new children go to buckets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  CUT_FLOW_REASON,
  type MarkSightings,
  openSession,
  QueueStore,
  releaseCutFlows,
  sweepOrphanDeps,
} from '@zkq/core/internal';
import { FlowProducer, Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { type Fixture, spawnFixture } from '../../helpers/process.js';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const ADDER = fileURLToPath(new URL('../../fixtures/queue/big-flow-adder.ts', import.meta.url));
const KIDS = 'children-of-one-very-large-parent-job';

test('an adder killed midway through a split flow: the parent never runs early, the leader fails it', async (t) => {
  const env = await queueEnv(t);
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'parents');
  const parents = new Queue('parents', env);
  t.after(() => parents.close());
  let runs = 0;
  const kids = new Worker(KIDS, async (job) => job.data.i, { ...env, concurrency: 20 });
  const worker = new Worker(
    'parents',
    async () => {
      runs++;
      return 'ran';
    },
    env,
  );
  t.after(() => Promise.all([kids.close(), worker.close()]));
  const adder: Fixture = spawnFixture(ADDER, [
    JSON.stringify({
      connectionString: env.connection.connectionString,
      prefix: env.prefix,
      parents: 'parents',
      kids: KIDS,
      children: 40_000,
    }),
  ]);
  t.after(() => adder.child.kill('SIGKILL'));
  await adder.waitForLine(/^adding$/, 30_000);
  // killed once some children were written
  await waitFor(async () => (await kidsWritten(env)) > 0, {
    timeoutMs: 60_000,
    what: 'the first children written',
  });
  adder.child.kill('SIGKILL');
  await adder.exited;
  assert.ok(!adder.lines.some((l) => l.startsWith('added')), 'the add was cut off');
  const marks = await session.getChildren(store.layout.flowAddsDir);
  assert.equal(marks.length, 1, 'the add left its mark');
  const [parentId] = await parents.getWaitingChildren().then((js) => js.map((j) => j.id));
  assert.ok(parentId, 'the parent waits for children');
  const written = await kidsWritten(env);
  assert.ok(written > 0 && written < 40_000, `${written} children written`);
  // the children written all run; the parent, counting 40,000, waits on. A transaction the adder
  // sent just before it died may still commit after the count above: count the written ones again
  await waitFor(async () => (await kidsDone(env)) === (await kidsWritten(env)), {
    timeoutMs: 120_000,
    what: 'the written children run',
  });
  assert.equal(await parents.getJobState(parentId), 'waiting-children');
  assert.equal(runs, 0, 'the parent did not run early');

  // the leader's tidy-up: the mark seen once, then judged stale (unchanged since)
  const seen: MarkSightings = new Map();
  assert.equal(await releaseCutFlows(store, () => [], seen, 0, 1000), 0);
  assert.equal(await releaseCutFlows(store, () => [], seen, 500, 1000), 0, 'not yet stale');
  assert.equal(await releaseCutFlows(store, () => [], seen, 1000, 1000), 1);
  assert.deepEqual(await session.getChildren(store.layout.flowAddsDir), []);
  await waitFor(async () => (await parents.getJobState(parentId)) === 'failed', {
    timeoutMs: 20_000,
    what: 'the parent to fail',
  });
  assert.equal((await parents.getJob(parentId))?.failedReason, CUT_FLOW_REASON);
  assert.equal(runs, 0, 'failed without running');
});

/** Children records written in KIDS so far. */
async function kidsWritten(env: Awaited<ReturnType<typeof queueEnv>>): Promise<number> {
  const q = new Queue(KIDS, env);
  try {
    const c = await q.getJobCounts();
    return Object.values(c).reduce((a, b) => a + b, 0);
  } catch {
    return 0;
  } finally {
    await q.close();
  }
}

async function kidsDone(env: Awaited<ReturnType<typeof queueEnv>>): Promise<number> {
  const q = new Queue(KIDS, env);
  try {
    return (await q.getJobCounts('completed')).completed ?? 0;
  } finally {
    await q.close();
  }
}

/** Every znode path under `path`, depth first. */
async function tree(session: Awaited<ReturnType<typeof openSession>>, path: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of await session.getChildren(path).catch(() => [] as string[])) {
    const child = `${path}/${name}`;
    out.push(child, ...(await tree(session, child)));
  }
  return out;
}

test('a big flow removed (its parent, then its children) leaves no node of it', async (t) => {
  const env = await queueEnv(t);
  const flows = new FlowProducer(env);
  const parents = new Queue('parents', env);
  const kids = new Queue(KIDS, env);
  t.after(() => Promise.all([flows.close(), parents.close(), kids.close()]));
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'parents');
  const before: string[] = await tree(session, '/parents');
  const tree3k = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: 3000 }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
  });
  assert.equal(await kids.count(), 3000);
  assert.equal(await parents.remove(tree3k.job.id), 1);
  await kids.obliterate({ force: true });
  assert.equal(await sweepOrphanDeps(store, () => []), 1);
  const left = (await tree(session, '/parents')).filter((p) => !before.includes(p));
  // containers stay (job shards, the deps shard directory); no record, pointer, entry or bucket does
  const { layout } = store;
  assert.deepEqual(
    left.filter((p) =>
      p.startsWith(`${layout.jobsDir}/`)
        ? p.split('/').length > 4
        : p.startsWith(`${layout.depsDir}/`)
          ? p.split('/').length > 4
          : p.startsWith(`${layout.childrenDir}/`) && p.split('/').length > 4,
    ),
    [],
    'nothing of the parent is left',
  );
  assert.equal(await session.exists(`/${KIDS}`), null, 'nor of its children');
  assert.equal(await session.exists(store.layout.deps(tree3k.job.id)), null);
});

test('a parent whose node was written before buckets: its entries settle where they are, new children go to buckets', async (t) => {
  const env = await queueEnv(t);
  const parents = new Queue('parents', env);
  const kidsQ = new Queue('kids', env);
  t.after(() => Promise.all([parents.close(), kidsQ.close()]));
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'parents');
  const { layout } = store;
  // a parent and two children as the layout before buckets wrote them
  const parent = await parents.add('parent', {});
  const a = await kidsQ.add('kid', { v: 1 }, { parent: { id: parent.id, queue: 'parents' } });
  const b = await kidsQ.add('kid', { v: 2 }, { parent: { id: parent.id, queue: 'parents' } });
  for (const c of [a, b]) {
    const child = { queue: 'kids', id: c.id };
    await session.delete(layout.depEntry(parent.id, 'u', child));
    await session.create(layout.legacyDepEntry(parent.id, 'u', child), Buffer.alloc(0));
  }
  for (const bucket of (await session.getChildren(layout.deps(parent.id))).filter((n) => n.startsWith('b-'))) {
    await session.delete(`${layout.deps(parent.id)}/${bucket}`);
  }
  await session.setData(layout.deps(parent.id), Buffer.from(JSON.stringify({ pending: 2 })));
  assert.deepEqual(await parent.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });
  // a third child joins: into a bucket, counted with the older two
  const c3 = await kidsQ.add('kid', { v: 3 }, { parent: { id: parent.id, queue: 'parents' } });
  assert.notEqual(await session.exists(layout.depEntry(parent.id, 'u', { queue: 'kids', id: c3.id })), null);
  assert.deepEqual(await parent.getDependenciesCount(), { processed: 0, unprocessed: 3, ignored: 0, failed: 0 });
  let values: Record<string, number> = {};
  const kidWorker = new Worker('kids', async (job) => job.data.v, env);
  t.after(() => kidWorker.close());
  await waitFor(async () => (await parent.getDependenciesCount()).processed === 3, {
    timeoutMs: 20_000,
    what: 'every child settled',
  });
  assert.notEqual(await session.exists(layout.legacyDepEntry(parent.id, 'p', { queue: 'kids', id: a.id })), null);
  assert.equal(await session.exists(layout.legacyDepEntry(parent.id, 'u', { queue: 'kids', id: a.id })), null);
  const parentWorker = new Worker(
    'parents',
    async (job) => {
      values = await job.getChildrenValues<number>();
      return 'done';
    },
    env,
  );
  t.after(() => parentWorker.close());
  await waitFor(async () => (await parents.getJob(parent.id))?.returnvalue === 'done', {
    timeoutMs: 20_000,
    what: 'the parent to run',
  });
  assert.deepEqual(Object.values(values).sort(), [1, 2, 3]);
});
