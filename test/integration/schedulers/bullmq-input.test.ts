/**
 * Job schedulers: a bad scheduler id gets a clear typed error and stores
 * nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../helpers/queue.js';

const { Queue } = withBackend(createZooKeeperBackend);

async function queueFor(t: { name?: string; after: (fn: () => unknown) => void }, name: string) {
  const env = await queueEnv(t);
  const queue = new Queue(name, { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => queue.close());
  return queue;
}

test('a scheduler id that cannot name its iterations is refused with a typed error, and nothing is stored', async (t) => {
  const queue = await queueFor(t, 'sched-ids');
  for (const id of ['a/b', 's'.repeat(200), 'with space']) {
    await assert.rejects(queue.upsertJobScheduler(id, { every: 1000 }, { name: 'tick' }), (err: Error) => {
      assert.equal((err as { code?: string }).code, 'ZKQ_INVALID_ARGUMENT', `${id.slice(0, 20)}: ${err.message}`);
      return true;
    });
  }
  assert.equal(await queue.getJobSchedulersCount(), 0);
  assert.deepEqual(await queue.getJobCounts('waiting', 'delayed'), { waiting: 0, delayed: 0 });
});
