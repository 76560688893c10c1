/**
 * A promoter judges due times on ZooKeeper's clock at the earliest it can
 * be by its last measure: the measure's write has its mtime somewhere within
 * the round trip, so taking the round trip's midpoint may put ZooKeeper's
 * time up to half of it ahead. Here the promoter's measuring write is held
 * back 400 ms before it is sent (its mtime is at the end of the round trip):
 * the job must still not be promoted before its due time, as ZooKeeper's own
 * clock says (the promotion's mtime against the due time, one clock).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { promotedIds, startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { beforeNextClockRead } from '../../../helpers/session-faults.js';
import { waitFor } from '../../../helpers/zk.js';

test('a promoter whose clock measure ran ahead does not promote a delayed job before its time', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('clock-bound', env);
  t.after(() => queue.close());
  const { keeper, store, session } = await startLeader(t, env, 'clock-bound', {
    id: 'promoter',
    before: async (store, session) => {
      await store.serverNow(); // the clock node exists: the promoter's measure is one write
      beforeNextClockRead(session, 'clock-bound', () => new Promise((r) => setTimeout(r, 400)));
    },
  });
  const promoted = promotedIds(keeper);

  const job = await queue.add('later', {}, { delay: 1000 });
  const due = (await store.getJob(job.id))?.record.due as number;
  await waitFor(async () => promoted.has(job.id), { timeoutMs: 15_000, what: 'the job promoted' });
  const stat = await session.exists(store.layout.job(job.id));
  assert.ok((stat?.mtime as number) >= due, `promoted at ${stat?.mtime}, ${due - (stat?.mtime as number)} ms early`);
});
