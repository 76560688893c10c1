/**
 * A parent given children over time, in bulks of `opts.parent`: its
 * entries spread over the buckets of its dependency node (no listing grows
 * with its children: one node held them all, a listing past the packet
 * limit from ~20,000 children of long names), and it runs once, after all
 * of them, with all their values. 20,000 here (about 90 s on two busy
 * cores); 100,000 with ZKQ_LONG_TESTS=1 (about 6 minutes), past the runner's per-file limit
 * (every child's finish writes the parent's node at its version, one after
 * the other), so run it alone with its own server and time limit:
 *
 *   ZKQ_LONG_TESTS=1 node --import tsx --conditions=zkq-source --test \
 *     --test-timeout=3600000 test/integration/flows/big-over-time.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSession, QueueStore } from '@zkq/core/internal';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import type { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const KIDS = 'children-of-one-very-large-parent-job';

/** Gives a waiting parent `n` children over time, in bulks of `per` (`opts.parent`), then runs them all. */
async function parentGrownOverTime(
  t: Parameters<typeof queueEnv>[0] & { after: (fn: () => unknown) => void },
  n: number,
) {
  const per = 1000;
  const {
    env,
    flows,
    queues: { parents },
  } = await flowEnv(t, 'parents');
  // a parent waiting for one child, which runs once all the others were added (so they all count) ...
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: [{ name: 'gate', queueName: 'gate', data: { i: -1 } }],
  });
  const parent = { id: tree.job.id, queue: 'parents' };
  let runs = 0;
  let count = 0;
  const kids = new Worker(KIDS, async (job) => job.data.i, { ...env, concurrency: 50 });
  const worker = new Worker(
    'parents',
    async (job) => {
      runs++;
      count = Object.keys(await job.getChildrenValues()).length;
      return 'done';
    },
    env,
  );
  t.after(() => Promise.all([kids.close(), worker.close()]));
  // ... given many more while children run: it waits for every one
  for (let i = 0; i < n; i += per) {
    await flows.addBulk(
      Array.from({ length: per }, (_, k) => ({ name: 'kid', queueName: KIDS, data: { i: i + k }, opts: { parent } })),
    );
  }
  const gate = new Worker('gate', async (job) => job.data.i, env);
  t.after(() => gate.close());
  // no listing of the parent's dependencies grows with its children: 256 buckets of about n/256
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const deps = new QueueStore(session, 'parents').layout.deps(tree.job.id);
  const buckets = await session.getChildren(deps);
  assert.ok(buckets.length <= 256 && buckets.every((b) => /^b-[0-9a-f]{2}$/.test(b)), buckets.slice(0, 5).join());
  const largest = Math.max(
    ...(await Promise.all(buckets.map(async (b) => (await session.getChildren(`${deps}/${b}`)).length))),
  );
  assert.ok(largest < (3 * n) / 256, `a bucket of ${largest} entries`);
  await waitFor(async () => (await parents.getJob(tree.job.id))?.returnvalue === 'done', {
    timeoutMs: 600_000,
    what: 'the parent to complete',
  });
  assert.equal(runs, 1);
  assert.equal(count, n + 1);
  assert.deepEqual(await tree.job.getDependenciesCount(), {
    processed: n + 1,
    unprocessed: 0,
    ignored: 0,
    failed: 0,
  });
}

test('a parent given 20,000 children over time runs once, after all of them, with all their values', async (t) => {
  await parentGrownOverTime(t, 20_000);
});

test('a parent given 100,000 children over time runs once, after all of them', {
  skip: !process.env.ZKQ_LONG_TESTS && 'long: set ZKQ_LONG_TESTS=1',
}, async (t) => {
  await parentGrownOverTime(t, 100_000);
});
