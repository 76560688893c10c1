/**
 * A parent's dependency node lives and dies with the parent: removed with a
 * parent removed as it finishes, swept by the leader after retention trimmed
 * the parent, and never in the way of a new job of the same id; a child's
 * settlement survives its worker's session expiry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { openSession, QueueStore, sweepOrphanDeps } from '@zkq/core/internal';
import { Worker as ZkqWorker } from '@zkq/worker';
import { type Job, withBackend } from 'bullmq';
import { bullFlowEnv } from '../../helpers/flows.js';
import { bullEnv } from '../../helpers/queue.js';
import { expire, nextEvent, waitFor } from '../../helpers/zk.js';

const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);

async function rawStore(t: { after: (fn: () => unknown) => void }, env: Awaited<ReturnType<typeof bullEnv>>['env']) {
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  return new QueueStore(session, 'q');
}

const tree = (id: string, opts: Record<string, unknown> = {}) => ({
  name: 'parent',
  queueName: 'q',
  opts: { jobId: id, ...opts },
  children: [{ name: 'child', queueName: 'q', data: {} }],
});

test('a parent removed as it completes takes its dependencies; the same flow can be added again', async (t) => {
  const { env, connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  const worker = new Worker('q', async (job: Job) => job.name, { connection });
  t.after(() => Promise.all([flow.close(), queue.close(), worker.close()]));
  const store = await rawStore(t, env);
  await flow.add(tree('p-1', { removeOnComplete: true }));
  await waitFor(async () => (await queue.getJob('p-1')) === undefined, { timeoutMs: 15_000 });
  assert.equal(await store.session.exists(store.layout.deps('p-1')), null);
  await flow.add(tree('p-1', { removeOnComplete: true }));
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 2, { timeoutMs: 15_000 });
});

test('the leader sweeps the dependencies of a trimmed parent; a new parent of that id is not in the way', async (t) => {
  const { env, flow, queue } = await bullFlowEnv(t);
  const store = await rawStore(t, env);
  // trimmed parents: record and pointer go, the dependency node stays (retention reads no record)
  await flow.add(tree('p-2'));
  await flow.add(tree('p-3'));
  for (const id of ['p-2', 'p-3']) {
    const parked = (await store.getJob(id))?.record.parked as string;
    await store.session.delete(parked);
    await store.session.delete(store.layout.job(id));
  }
  // a new flow reusing p-3 replaces its old node in its own transaction
  await flow.add(tree('p-3'));
  assert.deepEqual(await (await queue.getJob('p-3'))?.getDependenciesCount(), {
    processed: 0,
    unprocessed: 1,
    ignored: 0,
    failed: 0,
  });
  assert.equal(await sweepOrphanDeps(store, () => []), 1, 'only the orphan is swept');
  assert.equal(await store.session.exists(store.layout.deps('p-2')), null);
  assert.notEqual(await store.session.exists(store.layout.deps('p-3')), null, 'a live parent keeps its node');
});

test("a trimmed parent's node is not a new job's of that id: a plain job given a child counts that child alone", async (t) => {
  const { env, flow, queue } = await bullFlowEnv(t);
  const store = await rawStore(t, env);
  await flow.add({ ...tree('p-4'), children: [1, 2, 3].map((i) => ({ name: 'child', queueName: 'q', data: { i } })) });
  // trimmed as retention does: record and pointer go, the dependency node stays
  const parked = (await store.getJob('p-4'))?.record.parked as string;
  await store.session.delete(parked);
  await store.session.delete(store.layout.job('p-4'));
  // a plain job of that id, then a child given to it
  const plain = await queue.add('plain', {}, { jobId: 'p-4' });
  assert.deepEqual(await plain.getDependenciesCount(), { processed: 0, unprocessed: 0, ignored: 0, failed: 0 });
  await queue.add('child', {}, { parent: { id: 'p-4', queue: queue.qualifiedName } });
  assert.deepEqual(await plain.getDependenciesCount(), { processed: 0, unprocessed: 1, ignored: 0, failed: 0 });
  assert.equal(Object.keys((await plain.getDependencies()).unprocessed ?? {}).length, 1);
});

test('session expiry while the last child runs: it still settles, and releases its parent once', async (t) => {
  const { env, connection, flow, queue } = await bullFlowEnv(t);
  const added = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [{ name: 'child', queueName: 'kids', data: {} }],
  });
  let open!: () => void;
  const release = new Promise<void>((r) => {
    open = r;
  });
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  // the child runs in zkq's own Worker, whose session is at hand
  const kids = new ZkqWorker(
    'kids',
    async () => {
      started();
      await release;
      return 'kid done';
    },
    { connection: env.connection, prefix: env.prefix, lockDuration: 60_000 },
  );
  t.after(() => kids.close());
  let parentRuns = 0;
  const parents = new Worker(
    'q',
    async (job: Job) => {
      parentRuns++;
      return Object.values(await job.getChildrenValues());
    },
    { connection },
  );
  t.after(() => parents.close());
  await running;
  const session = await kids.client;
  const renewed = nextEvent(session, 'reconnected');
  await expire(session);
  await renewed;
  open();
  await waitFor(async () => (await added.job.getState()) === 'completed', { timeoutMs: 20_000 });
  assert.deepEqual((await queue.getJob(added.job.id as string))?.returnvalue, ['kid done']);
  assert.equal(parentRuns, 1);
});
