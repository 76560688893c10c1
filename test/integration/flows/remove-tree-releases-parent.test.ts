/**
 * BullMQ's `job.remove()` (removeChildren: true by default) removes a parent
 * with its whole tree. On @zkq/bullmq the children go first, one removal
 * each, and the removal of the last pending one releases the parent to
 * waiting, as any child's removal does; the parent is removed only after.
 * In between it is claimable: a worker can run the job that is being
 * removed (BullMQ removes the tree in one step, and a hard removal there
 * never moves the parent to wait). The release is visible in the events.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { FlowProducer, Queue, QueueEvents } = withBackend(createZooKeeperBackend);

test('removing a parent with its children never makes the parent claimable', async (t) => {
  const { connection } = await bullEnv(t);
  const events = new QueueEvents('q', { connection });
  const flow = new FlowProducer({ connection });
  const queue = new Queue('q', { connection });
  t.after(() => Promise.all([events.close(), flow.close(), queue.close()]));
  await events.waitUntilReady();
  const seen: string[] = [];
  for (const event of ['waiting', 'removed'] as const) {
    events.on(event as 'waiting', (args: { jobId: string; prev?: string }) =>
      seen.push(`${event} ${args.jobId} from ${args.prev}`),
    );
  }
  const tree = await flow.add({
    name: 'parent',
    queueName: 'q',
    children: [
      { name: 'kid', queueName: 'q', data: {} },
      { name: 'kid', queueName: 'kids', data: {} },
    ],
  });
  const id = tree.job.id as string;
  assert.equal(await tree.job.remove(), undefined);
  assert.equal(await queue.getJob(id), undefined, 'the parent is gone');
  await waitFor(() => seen.some((s) => s.startsWith(`removed ${id} `)), { what: "the parent's removed event" });
  assert.deepEqual(
    seen.filter((s) => s.includes(` ${id} `)),
    [`removed ${id} from waiting-children`],
    'the parent went from waiting-children to removed, never through waiting',
  );
});
