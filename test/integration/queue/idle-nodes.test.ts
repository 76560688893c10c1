/**
 * Every node has an owner that deletes it: once a queue has run a mixed
 * workload (plain, delayed, prioritized, lifo, deduplicated simple and with
 * a ttl, failed and retried, removed), drained, had its jobs removed and its
 * workers closed, it holds exactly the nodes the layout header (layout.ts,
 * "An empty, idle queue") lists, and no other.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { JOB_SHARDS, openSession, QueueStore, sweepDedupKeys } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';
import { countNodes, prefixSession } from '../../helpers/znodes.js';

/** Every path under `path`, itself included. */
async function paths(session: Session, path: string): Promise<string[]> {
  const names = await session.getChildren(path);
  const below = await Promise.all(names.map((n) => paths(session, `${path}/${n}`)));
  return [path, ...below.flat()];
}

/** The directories made when a queue is first used (layout.directories(), meta and ids). */
const FIXED = 2 + JOB_SHARDS + 16;

test('a drained queue whose jobs were removed holds the nodes of an empty, idle queue, and no other', async (t) => {
  const env = await queueEnv(t);
  const session = await openSession(env.connection, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'idle');
  const queue = new Queue('idle', env);
  t.after(() => queue.close());
  const gone = { removeOnComplete: true, removeOnFail: true };
  const ttl = 1000;
  await queue.add('plain', {}, gone);
  await queue.add('prioritized', {}, { ...gone, priority: 7 });
  await queue.add('lifo', {}, { ...gone, lifo: true });
  await queue.add('simple', {}, { ...gone, deduplication: { id: 'simple' } });
  await queue.add('throttled', {}, { ...gone, deduplication: { id: 'throttled', ttl } });
  await queue.add('retried', {}, { ...gone, attempts: 2 });
  await queue.add('failed', {}, { attempts: 1 });
  // delayed into an hour that is not over when the test ends, promoted by hand: its containers stay
  const delayed = await queue.add('delayed', {}, { ...gone, delay: 2 * 3_600_000 });
  const due = (await store.getJob(delayed.id as string))?.record.due as number;
  const removed = await queue.add('removed', {}, { deduplication: { id: 'removed' }, priority: 3 });
  assert.equal(await queue.remove(removed.id as string), 1);
  const worker = new Worker(
    'idle',
    async (job) => {
      if (job.name === 'failed' || (job.name === 'retried' && job.attemptsMade === 0)) throw new Error('no');
      return 'ok';
    },
    env,
  );
  t.after(() => worker.close());
  const settled = async () =>
    (await queue.getFailedCount()) === 1 && (await queue.count()) === 0 && (await queue.getActiveCount()) === 0;
  await delayed.promote();
  await waitFor(settled, { what: 'the workload drained' });
  const [failed] = await queue.getFailed();
  assert.equal(failed?.name, 'failed');
  await failed?.retry();
  await waitFor(async () => (await queue.getFailed())[0]?.attemptsMade === 1 && (await settled()), {
    what: 'the retried job failed again',
  });
  assert.deepEqual(await queue.clean(0, 0, 'failed'), [failed?.id]);
  await worker.close();
  // the ttl key's owner is the leader's sweep, once its ttl ran out (run here rather than waited for)
  const start = await store.serverNow();
  await waitFor(async () => (await store.serverNow()) - start >= ttl, { what: 'the ttl to run out' });
  await sweepDedupKeys(store, () => []);

  const plain = await prefixSession(t, env);
  // receipts go a moment after their transaction settled (a batch per second)
  await waitFor(async () => (await plain.getChildren('/idle/receipts')).length === 0, { what: 'receipts deleted' });
  const left = (await paths(plain, '/idle')).filter((p) => !/^\/idle\/jobs\/[0-9a-f]{2}$/.test(p));
  const { layout } = store;
  const hour = layout.delayHour(due);
  const expected = [
    ...layout.directories().filter((p) => !p.startsWith(`${layout.jobsDir}/`)),
    layout.meta,
    layout.ids,
    layout.clock, // ZooKeeper's time, asked for by the ttl key
    layout.dedupDir, // its version is the generation of deduplication keys: it stays once made
    layout.lane('p-0000000000'),
    layout.bucket('p-0000000000', 0), // the plain lane's tail bucket stays
    layout.bucketOf(layout.completedDir, 0), // the tail bucket of each finished set stays
    layout.bucketOf(layout.failedDir, 0),
    layout.delayDay(due), // a delayed job's containers, until its hour is over
    hour,
    layout.bucketOf(hour, 0),
  ].map((p) => `/idle${p.slice(layout.root.length)}`);
  assert.deepEqual([...left].sort(), [...expected].sort());
  assert.equal(await countNodes(plain, '/idle'), FIXED + 9);
});
