/**
 * The leader's promoter sleeps until the next due job, woken early by
 * watches on the delayed containers. Its own promotions fire the watches
 * its pass had set; a job delayed right after a promotion must still wake
 * it (the poll is stretched here so that only a watch can).
 */
import { test } from 'node:test';
import { Housekeeper, openSession, QueueStore } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';

test('a job delayed right after a promotion is promoted without waiting for the poll', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('wake', env);
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  const store = new QueueStore(session, 'wake');
  await store.init();
  const keeper = new Housekeeper(store, 'leader', 60_000, 600_000);
  t.after(async () => {
    await keeper.close();
    await session.close();
  });
  const promoted = new Set<string>();
  keeper.on('promoted', (ids) => {
    for (const id of ids) promoted.add(id);
  });
  const elected = nextEvent(keeper, 'elected');
  await keeper.start();
  await elected;

  for (let i = 0; i < 3; i++) {
    const job = await queue.add('later', { i }, { delay: 150 });
    await waitFor(async () => promoted.has(job.id), { timeoutMs: 15_000, what: `job ${i} promoted by a watch` });
  }
});
