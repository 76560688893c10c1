/**
 * The leader checks the schedulers when they change and when one comes due,
 * not on a poll: a scheduler made after its last check is read once the
 * listing's watch fires (the watch on the directory's creation, the first
 * time), and one whose iteration went before its time is healed at that
 * time. The leader's backstop is stretched here, so only a watch or a due
 * time can make it check.
 */
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { iterationId } from '@zkq/core/internal';
import { Queue as ZkqQueue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { startLeader } from '../../helpers/housekeeper.js';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue } = withBackend(createZooKeeperBackend);

test('a scheduler made after the leader checked, left without its iteration, is healed: the watch woke it', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const { keeper } = await startLeader(t, env, 'heal-watch', { promotePollMs: 600_000 });
  const healed = new Set<string>();
  keeper.on('healed', (ids) => {
    for (const id of ids) healed.add(id);
  });
  const queue = new Queue('heal-watch', { connection });
  t.after(() => queue.close());
  const zkq = new ZkqQueue('heal-watch', env);
  t.after(() => zkq.close());
  // due at once; its iteration removed: only a heal gives it the next one
  await queue.upsertJobScheduler('tick', { every: 60_000 }, { name: 'tick' });
  const first = (await queue.getJobScheduler('tick'))?.next as number;
  await zkq.remove(iterationId('tick', first));
  await waitFor(() => healed.size > 0, { what: 'the scheduler healed by the leader' });
});

test('a scheduler whose iteration was removed before its time is healed by the leader at that time', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('heal-due', { connection });
  t.after(() => queue.close());
  const zkq = new ZkqQueue('heal-due', env);
  t.after(() => zkq.close());
  await queue.upsertJobScheduler('tick', { every: 60_000, startDate: Date.now() + 2000 }, { name: 'tick' });
  const first = (await queue.getJobScheduler('tick'))?.next as number;
  const { keeper } = await startLeader(t, env, 'heal-due', { promotePollMs: 600_000 });
  const healed = new Set<string>();
  keeper.on('healed', (ids) => {
    for (const id of ids) healed.add(id);
  });
  await zkq.remove(iterationId('tick', first));
  await waitFor(() => healed.size > 0, { what: 'the scheduler healed by the leader at its time' });
});
