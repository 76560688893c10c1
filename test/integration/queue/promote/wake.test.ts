/**
 * The leader's promoter sleeps until the next due job, woken early by
 * watches on the delayed containers. Its own promotions fire the watches
 * its pass had set; a job delayed right after a promotion must still wake
 * it (the poll is stretched here so that only a watch can).
 */
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { promotedIds, startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a job delayed right after a promotion is promoted without waiting for the poll', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('wake', env);
  t.after(() => queue.close());
  const { keeper } = await startLeader(t, env, 'wake', { promotePollMs: 600_000 });
  const promoted = promotedIds(keeper);

  for (let i = 0; i < 3; i++) {
    const job = await queue.add('later', { i }, { delay: 150 });
    await waitFor(async () => promoted.has(job.id), { timeoutMs: 15_000, what: `job ${i} promoted by a watch` });
  }
});
