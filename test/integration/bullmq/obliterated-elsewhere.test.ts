/**
 * BullMQ's Queue on the ZooKeeper backend, its queue obliterated by another
 * client: the next add sets the queue up again (`meta` included) and is
 * added, as on Redis, numbered, with its own id or with a deduplication
 * key; the progress or a log line of a job that went with the queue fails
 * as on Redis (the job does not exist), and a published event with
 * NoNodeError: neither makes anything of the queue again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { NoNodeError } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { bullEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

const { Queue, QueueEventsProducer } = withBackend(createZooKeeperBackend);

test('a BullMQ add to a queue obliterated by another client sets it up again and is added', async (t) => {
  const { env, connection } = await bullEnv(t);
  const name = 'bull-gone';
  const writer = new Queue(name, { connection });
  t.after(() => writer.close());
  const other = new Queue(name, { connection });
  t.after(() => other.close());
  const session = await prefixSession(t, env);
  const meta = new QueueLayout(name).meta;
  const added: string[] = [];
  for (const opts of [{}, { jobId: 'own' }, { deduplication: { id: 'key' } }]) {
    await writer.add('before', 0);
    await other.obliterate();
    const job = await writer.add('after', opts, opts);
    assert.ok(await session.exists(meta), `set up again by the add with ${JSON.stringify(opts)}, meta included`);
    added.push(job.id as string);
    assert.deepEqual((await other.getJob(job.id as string))?.data, opts);
  }
  assert.equal(added[1], 'own');
});

test("a job's progress or log line, the job gone with its queue, or a published event fails and makes nothing of the queue again", async (t) => {
  const { env, connection } = await bullEnv(t);
  const name = 'bull-gone-job';
  const writer = new Queue(name, { connection });
  t.after(() => writer.close());
  const other = new Queue(name, { connection });
  t.after(() => other.close());
  const job = await writer.add('gone', 0);
  await job.log('before');
  const producer = new QueueEventsProducer(name, { connection });
  t.after(() => producer.close());
  await producer.publishEvent({ eventName: 'custom' });
  await other.obliterate();
  await assert.rejects(job.updateProgress(50), /Missing key for job/);
  await assert.rejects(job.log('after'), /Missing key for job/);
  await assert.rejects(producer.publishEvent({ eventName: 'custom' }), NoNodeError);
  const session = await prefixSession(t, env);
  assert.equal(await session.exists(new QueueLayout(name).root), null, 'nothing of the queue made again');
});
