/**
 * Every worker promotes: a leader and standbys (here three housekeepers and
 * a promoter with no grace at all) read the same due jobs while the jobs are
 * removed, promoted by hand one by one and all at once (`promoteJobs`), and
 * added again. Each job that is not removed ends waiting with one ready
 * pointer (none promoted twice), none stays delayed (none lost), and a
 * removed job leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Housekeeper, openSession, promoteDue, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const ROUNDS = 4;
const JOBS = 60;

test('promoters racing over jobs removed and promoted by hand: each job ends waiting once or gone', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('promote-edits', env);
  t.after(() => queue.close());
  const stores = await Promise.all(
    [0, 1, 2, 3].map(async () => {
      const session = await openSession(env.connection, env.prefix);
      t.after(() => session.close());
      const store = new QueueStore(session, 'promote-edits');
      await store.init();
      return store;
    }),
  );
  const keepers = stores.slice(0, 3).map((s, i) => new Housekeeper(s, `keeper-${i}`, 60_000));
  const errors: unknown[] = [];
  for (const k of keepers) k.on('error', (err) => errors.push(err));
  t.after(() => Promise.all(keepers.map((k) => k.close())));
  await Promise.all(keepers.map((k) => k.start()));
  // a promoter with no grace, looking all the time
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

  const removed = new Set<string>();
  const kept = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    const jobs = await queue.addBulk(
      Array.from({ length: JOBS }, (_, i) => ({ name: 'd', data: { round, i }, opts: { delay: 200 + (i % 5) * 40 } })),
    );
    const edits = jobs.map(async (job, i) => {
      const id = job.id as string;
      await new Promise((r) => setTimeout(r, 150 + (i % 7) * 30));
      if (i % 4 === 0) {
        await queue.remove(id);
        removed.add(id);
        return;
      }
      kept.add(id);
      if (i % 4 === 1) await job.promote().catch(() => undefined); // already promoted by a promoter
    });
    edits.push(queue.promoteJobs({ count: 5 }));
    await Promise.all(edits);
  }
  await waitFor(async () => (await queue.getJobCounts('delayed')).delayed === 0, {
    timeoutMs: 30_000,
    what: 'no delayed job left',
  });
  racing = false;
  await eagerLoop;
  const counts = await queue.getJobCounts('waiting', 'delayed');
  assert.deepEqual(counts, { waiting: kept.size, delayed: 0 }, 'one ready pointer per kept job');
  for (const id of kept) assert.equal(await queue.getJobState(id), 'waiting', `job ${id}`);
  for (const id of removed) assert.equal(await queue.getJob(id), undefined, `job ${id} removed`);
  assert.deepEqual(errors, [], 'no promoter failed');
});
