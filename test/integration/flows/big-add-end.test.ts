/**
 * The end of a flow written in several transactions: its mark goes in the
 * transaction that writes its last children, so an adder that dies once
 * every child is written leaves no mark for the leader to judge. Guards:
 * the mark was deleted in a transaction of its own after the last one; an
 * adder killed just before it left the mark, and the leader's tidy-up
 * failed a parent all of whose children were written (and waiting to run).
 * A lost reply in the middle of such an add is read back, not sent twice:
 * no child doubled, none counted twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type MarkSightings, openSession, QueueStore, releaseCutFlows } from '@zkq/core/internal';
import { FlowProducer, Queue } from '@zkq/producer';
import { FaultProxy, OP } from '../../helpers/fault-proxy.js';
import { runToParent } from '../../helpers/flows.js';
import { type Fixture, spawnFixture } from '../../helpers/process.js';
import { queueEnv } from '../../helpers/queue.js';

const ADDER = fileURLToPath(new URL('../../fixtures/queue/big-flow-adder.ts', import.meta.url));
const KIDS = 'children-of-one-very-large-parent-job';

test('an adder killed after its last children were written leaves no mark: the leader never fails the parent, which runs once after them', async (t) => {
  const n = 3_000;
  const env = await queueEnv(t);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'parents');
  const parents = new Queue('parents', env);
  const kidsQueue = new Queue(KIDS, env);
  t.after(() => Promise.all([parents.close(), kidsQueue.close()]));
  // a transaction that only deletes the mark (small: the flow's own transactions carry children)
  const lone = proxy.cutBefore(
    (r) => r.op === OP.multi && r.packet.length < 1_000 && r.packet.includes(Buffer.from('deps-adds/a-')),
    10_000,
  );
  const adder: Fixture = spawnFixture(ADDER, [
    JSON.stringify({
      connectionString: proxy.connectionString,
      prefix: env.prefix,
      parents: 'parents',
      kids: KIDS,
      children: n,
    }),
  ]);
  t.after(() => adder.child.kill('SIGKILL'));
  const ended = await Promise.race([
    lone.fired.then(() => 'cut' as const),
    adder.waitForLine(/^added /, 120_000).then(() => 'added' as const),
  ]);
  if (ended === 'cut') {
    // the adder dies there, every transaction of its flow committed
    adder.child.kill('SIGKILL');
    await adder.exited;
  }
  const total = Object.values(await kidsQueue.getJobCounts()).reduce((a, b) => a + b, 0);
  assert.equal(total, n, 'every child written');
  const [parentId] = await parents.getWaitingChildren().then((js) => js.map((j) => j.id));
  assert.ok(parentId, 'the parent waits for its children');

  // the leader's tidy-up, as if the mark stayed unchanged for long
  const seen: MarkSightings = new Map();
  await releaseCutFlows(store, () => [], seen, 0, 1000);
  await releaseCutFlows(store, () => [], seen, 1000, 1000);
  assert.deepEqual(await session.getChildren(store.layout.flowAddsDir).catch(() => []), [], 'no mark left');
  assert.equal(await parents.getJobState(parentId), 'waiting-children', 'the parent was not failed');

  assert.equal(await runToParent(t, env, KIDS, parents, parentId), 1);
  assert.equal((await parents.getJob(parentId))?.returnvalue, n);
});

test('a split add whose second transaction lost its reply: every child once, counted once, the parent runs once after them', async (t) => {
  const n = 3_000;
  const env = await queueEnv(t);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const via = { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } };
  const flows = new FlowProducer(via);
  const parents = new Queue('parents', env);
  const kidsQueue = new Queue(KIDS, env);
  t.after(() => Promise.all([flows.close(), parents.close(), kidsQueue.close()]));
  // the first large transaction that rewrites the mark (the one creating it names the parent's record)
  let seen = 0;
  const lost = proxy.loseReply((r) => {
    if (r.op !== OP.multi || r.packet.length < 100_000 || !r.packet.includes(Buffer.from('deps-adds/a-'))) return false;
    return ++seen === 2;
  });
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: n }, (_, i) => ({ name: 'kid', queueName: KIDS, data: { i } })),
  });
  assert.ok(lost.hasFired, 'a reply was lost');
  assert.equal(tree.children?.length, n);
  const total = Object.values(await kidsQueue.getJobCounts()).reduce((a, b) => a + b, 0);
  assert.equal(total, n, 'every child written once');
  assert.deepEqual(await tree.job.getDependenciesCount(), { processed: 0, unprocessed: n, ignored: 0, failed: 0 });

  assert.equal(await runToParent(t, env, KIDS, parents, tree.job.id), 1);
  assert.equal((await parents.getJob(tree.job.id))?.returnvalue, n);
});
