/**
 * A BullMQ edit of a job (here updateData) whose transaction's reply was
 * lost after the server applied it resolves: read back by its receipt, it
 * is not planned again. Planned again from a fresh look, it found the job
 * claimed meanwhile by a worker elsewhere and threw JobStateError for an
 * edit that was written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { claimJobs, scanHead } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

const { Queue } = withBackend(createZooKeeperBackend);

test('updateData whose reply was lost resolves though the job was claimed meanwhile', async (t) => {
  const name = 'update-data-reply-lost';
  const { proxy, other, env, defer } = await storeAcrossProxy(t, name);
  const connection = { ...env.connection, connectionString: proxy.connectionString, namespace: env.prefix };
  const queue = new Queue(name, { connection });
  defer(() => queue.close());
  const job = await queue.add('j', { v: 1 }, { jobId: 'edited-1' });
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, 'edited-1'), released);
  const update = job.updateData({ v: 2 });
  await within(lost.fired, 'the edit sent, its reply lost');
  // while this client is cut off, a worker elsewhere claims the job
  const head = await scanHead(other, { limit: 10, exclude: new Set() });
  const { claimed } = await claimJobs(
    other,
    head.filter((c) => c.id === 'edited-1'),
    { workerId: 'elsewhere', lockDuration: 60_000 },
  );
  assert.equal(claimed.length, 1, 'the job claimed elsewhere');
  reconnect();
  await within(update, 'the edit settled');
  assert.deepEqual((await other.getJob('edited-1'))?.record.data, { v: 2 });
});
