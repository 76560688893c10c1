/**
 * A parent's dependency node holds one entry per child, and a parent can be
 * given any number of children (`opts.parent`, a transaction per add or per
 * bulk of flows, each of which fits). Deleting all the entries inside the
 * parent's own change (its finish, its removal) would not fit one
 * transaction past ~6,000 children: the completion would never be written.
 * A node with more than DROP_INLINE entries is left to the leader's sweep,
 * which deletes it in chunks.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSession, QueueStore, sweepOrphanDeps } from '@zkq/core/internal';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

/** A long queue name: longer entry names, so fewer children pass the budget. */
const KIDS = 'children-of-one-very-large-parent-job';
const CHILDREN = 7000;
const PER_ADD = 1000;

async function bigParent(t: { name?: string; after: (fn: () => unknown) => void }) {
  const {
    env,
    flows,
    queues: { parents },
  } = await flowEnv(t, 'parents');
  // a parent waiting for one child that fails and lets it go on (continueParentOnFailure) ...
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    opts: { removeOnComplete: true },
    children: [{ name: 'bad', queueName: 'bad', opts: { continueParentOnFailure: true } }],
  });
  const parent = { id: tree.job.id, queue: 'parents' };
  // ... and many more children, added to it in bulks of flows (each bulk one transaction that fits)
  for (let i = 0; i < CHILDREN; i += PER_ADD) {
    await flows.addBulk(
      Array.from({ length: PER_ADD }, () => ({ name: 'kid', queueName: KIDS, data: {}, opts: { parent } })),
    );
  }
  assert.equal((await tree.job.getDependenciesCount({ unprocessed: true })).unprocessed, CHILDREN + 1);
  return { env, tree, parents };
}

test('a parent with many children, removed as it completes, completes once', async (t) => {
  const { env, tree, parents } = await bigParent(t);
  let runs = 0;
  const lost: string[] = [];
  const worker = new Worker(
    'parents',
    async () => {
      runs++;
      return 'done';
    },
    { ...env, lockDuration: 2000, stalledInterval: 500 },
  );
  worker.on('lost', (_job, err) => lost.push(`${(err as { code?: string }).code}: ${err.message}`));
  const bad = new Worker(
    'bad',
    async () => {
      throw new Error('broken');
    },
    env,
  );
  t.after(() => Promise.all([worker.close(), bad.close()]));
  // the child fails, the parent runs: then it is gone (completed and removed), or failed
  await waitFor(async () => runs > 0 && ['unknown', 'failed'].includes(await parents.getJobState(tree.job.id)), {
    timeoutMs: 40_000,
    what: 'the parent to finish',
  });
  assert.deepEqual(lost, [], 'the parent lost its completion');
  assert.equal(await parents.getJobState(tree.job.id), 'unknown', 'the parent completed and was removed');
  assert.equal(runs, 1);
});

test('a parent with many children can be removed; the sweep deletes its node in chunks', async (t) => {
  const { env, tree, parents } = await bigParent(t);
  assert.equal(await parents.remove(tree.job.id), 1);
  assert.equal(await parents.getJobState(tree.job.id), 'unknown');
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'parents');
  assert.notEqual(await session.exists(store.layout.deps(tree.job.id)), null, 'left for the sweep');
  assert.equal(await sweepOrphanDeps(store, () => []), 1);
  assert.equal(await session.exists(store.layout.deps(tree.job.id)), null);
});
