/**
 * A due job whose promotion by the leader lost a race to an edit of its
 * record (its data updated between the leader's read and its move: the move
 * fails on the record's version, its pointer stays) is looked at again soon:
 * the edit fires none of the leader's watches, and the look that lost it
 * saw no later due time, so the leader slept until its backstop (a third of
 * the session timeout, up to 10 s), where it used to poll every second.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Queue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { promotedIds, startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const Bull = withBackend(createZooKeeperBackend);

test("a due job whose promotion lost a race to its record's edit is promoted without waiting for the backstop", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('lost-move', env);
  t.after(() => queue.close());
  const bull = new Bull.Queue('lost-move', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => bull.close());
  let edited = false;
  let jobPath = '';
  // only a watch, a due time it knows or a look it means to make again can wake it: its backstop is stretched
  const { keeper, store } = await startLeader(t, env, 'lost-move', {
    promotePollMs: 600_000,
    before: (_store, session) => {
      const multi = session.multi.bind(session);
      session.multi = async (ops) => {
        if (!edited && jobPath !== '' && ops.some((op) => op.op === 'setData' && op.path === jobPath)) {
          edited = true; // the job's data is updated between the leader's read of its record and its move
          await (await bull.getJob(jobPath.slice(jobPath.lastIndexOf('/') + 1)))?.updateData({ edited: true });
        }
        return multi(ops);
      };
    },
  });
  const promoted = promotedIds(keeper);
  const job = await queue.add('later', { edited: false }, { delay: 300 });
  jobPath = store.layout.job(job.id);
  await waitFor(() => edited, { what: "the leader's move sent after the edit" });
  await waitFor(() => promoted.has(job.id), { timeoutMs: 15_000, what: 'the job promoted after the lost race' });
  assert.deepEqual((await queue.getJob(job.id))?.data, { edited: true });
  assert.equal(await queue.getJobState(job.id), 'waiting');
});
