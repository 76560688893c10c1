/**
 * A flow whose many children finish at once in several worker processes of
 * both front-ends, one of them killed mid-run: every child's standing is
 * written at its parent's dependency node version, so the parent is
 * released exactly once, with every child's value, and runs once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { dependencyCounts, openSession, QueueStore, readDeps } from '@zkq/core/internal';
import { type Job, withBackend } from 'bullmq';
import { type Fixture, spawnFixture } from '../helpers/process.js';
import { bullEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/queue/limits-worker.ts', import.meta.url));
const { Queue, Worker, FlowProducer } = withBackend(createZooKeeperBackend);
const CHILDREN = 60;

test('sixty children in three processes, one killed: the parent is released once with every value', async (t) => {
  const { env, connection } = await bullEnv(t);
  const flow = new FlowProducer({ connection });
  const parents = new Queue('assemble', { connection });
  t.after(() => Promise.all([flow.close(), parents.close()]));
  const spawned: Fixture[] = [];
  t.after(() => {
    for (const f of spawned) f.child.kill('SIGKILL');
  });
  const spawn = (frontEnd: 'bullmq' | 'zkq') => {
    const f = spawnFixture(WORKER, [
      JSON.stringify({
        connectionString: env.connection.connectionString,
        namespace: env.prefix,
        queue: 'parts',
        frontEnd,
        concurrency: 8,
        sleepMs: 5,
        lockDuration: 3000,
        sessionTimeout: 3000,
      }),
    ]);
    spawned.push(f);
    return f;
  };

  const tree = await flow.add({
    name: 'assemble',
    queueName: 'assemble',
    data: {},
    children: Array.from({ length: CHILDREN }, (_, i) => ({ name: 'part', queueName: 'parts', data: { i } })),
  });
  const parentId = tree.job.id as string;
  let runs = 0;
  let values: Record<string, unknown> = {};
  const assembler = new Worker(
    'assemble',
    async (job: Job) => {
      runs++;
      values = await job.getChildrenValues();
      return Object.keys(values).length;
    },
    { connection },
  );
  t.after(() => assembler.close());

  const workers = [spawn('bullmq'), spawn('zkq'), spawn('bullmq')];
  const victim = workers[0] as Fixture;
  await Promise.all(workers.map((w) => w.waitForLine(/^ready$/)));
  // kill one process once it has started some children (some of them then stall and run again)
  await victim.waitForLine(/^claim /);
  victim.child.kill('SIGKILL');

  await waitFor(async () => (await parents.getJob(parentId))?.returnvalue === CHILDREN, {
    timeoutMs: 60_000,
    what: 'the parent completed with every child value',
  });
  assert.equal(runs, 1, 'the parent ran once');
  assert.equal(Object.keys(values).length, CHILDREN);
  assert.ok(Object.values(values).every((v) => typeof v === 'string' && v.startsWith('done-by-')));

  // what ZooKeeper recorded: nothing pending, every child processed, one attempt of the parent
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'assemble');
  assert.deepEqual(await readDeps(store, parentId), { pending: 0, bucketed: true });
  assert.deepEqual(await dependencyCounts(store, parentId), {
    processed: CHILDREN,
    unprocessed: 0,
    ignored: 0,
    failed: 0,
  });
  const parent = await store.getJob(parentId);
  assert.equal(parent?.record.attemptsStarted, 1);
  t.diagnostic(`children per process: ${workers.map((w) => w.lines.filter((l) => l.startsWith('claim ')).length)}`);
});
