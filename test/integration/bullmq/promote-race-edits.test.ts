/**
 * BullMQ's edits of delayed jobs while every worker promotes: a leader and
 * standbys (three housekeepers) and a promoter with no grace read the same
 * due jobs while BullMQ's Job moves some later (changeDelay) and gives others
 * a new priority. Each job ends waiting with one ready pointer, in the lane
 * of its priority; one moved later is not promoted before its new due time
 * (the promotion's mtime against it, ZooKeeper's clock).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Housekeeper, openSession, promoteDue, QueueStore } from '@zkq/core/internal';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);
const JOBS = 45;

test('promoters racing over delayed jobs moved later and given a new priority: each waits once, none early', async (t) => {
  const env = await queueEnv(t);
  const name = 'promote-bull-edits';
  const queue = new Queue(name, { connection: { ...env.connection, namespace: env.prefix } });
  const zkq = new ZkqQueue(name, env);
  t.after(() => Promise.all([queue.close(), zkq.close()]));
  const stores = await Promise.all(
    [0, 1, 2, 3].map(async () => {
      const session = await openSession(env.connection, env.prefix);
      t.after(() => session.close());
      const store = new QueueStore(session, name);
      await store.init();
      return store;
    }),
  );
  const keepers = stores.slice(0, 3).map((s, i) => new Housekeeper(s, `keeper-${i}`, 60_000));
  const errors: unknown[] = [];
  for (const k of keepers) k.on('error', (err) => errors.push(err));
  t.after(() => Promise.all(keepers.map((k) => k.close())));
  await Promise.all(keepers.map((k) => k.start()));
  let racing = true;
  const eager = stores[3] as QueueStore;
  const eagerLoop = (async () => {
    while (racing) {
      await promoteDue(eager, undefined, undefined, await eager.clock.earliest()).catch((err) => errors.push(err));
    }
  })();
  t.after(async () => {
    racing = false;
    await eagerLoop;
  });

  const jobs = await queue.addBulk(
    Array.from({ length: JOBS }, (_, i) => ({ name: 'd', data: { i }, opts: { delay: 250 + (i % 5) * 30 } })),
  );
  const movedLater = new Map<string, number>(); // id -> new due (ZooKeeper's clock)
  const prioritized = new Set<string>();
  await Promise.all(
    jobs.map(async (job, i) => {
      const id = job.id as string;
      await new Promise((r) => setTimeout(r, 200 + (i % 6) * 25));
      try {
        if (i % 3 === 0) {
          await job.changeDelay(1500);
          movedLater.set(id, (await eager.getJob(id))?.record.due as number);
        } else if (i % 3 === 1) {
          await job.changePriority({ priority: 5 });
          prioritized.add(id);
        }
      } catch (err) {
        // promoted before the edit: refused as not delayed (changeDelay); a waiting job moves lanes
        if (!/not in the delayed state|is not in/i.test(String(err))) throw err;
      }
    }),
  );
  await waitFor(async () => (await zkq.getJobCounts('delayed')).delayed === 0, {
    timeoutMs: 30_000,
    what: 'no delayed job left',
  });
  racing = false;
  await eagerLoop;
  const counts = await zkq.getJobCounts('waiting', 'prioritized', 'delayed');
  assert.deepEqual(
    counts,
    { waiting: JOBS - prioritized.size, prioritized: prioritized.size, delayed: 0 },
    'one ready pointer each',
  );
  t.diagnostic(`${movedLater.size} moved later, ${prioritized.size} given a priority, delayed or just promoted`);
  for (const [id, due] of movedLater) {
    const stat = await eager.session.exists(eager.layout.job(id));
    assert.ok((stat?.mtime as number) >= due, `job ${id} promoted ${due - (stat?.mtime as number)} ms early`);
  }
  for (const job of jobs) {
    const stored = await eager.getJob(job.id as string);
    const state = prioritized.has(job.id as string) ? 'prioritized' : 'waiting';
    assert.equal(await zkq.getJobState(job.id as string), state, `job ${job.id}`);
    if (prioritized.has(job.id as string)) assert.equal(stored?.record.priority, 5, `job ${job.id}'s priority`);
  }
  assert.deepEqual(errors, [], 'no promoter failed');
});
