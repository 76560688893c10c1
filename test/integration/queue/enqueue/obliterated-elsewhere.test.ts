/**
 * An add to a queue another client obliterated (this client's store still
 * thinks it made): it sets the queue up again, `meta` included, as a first
 * add does, and is added, as BullMQ on Redis makes a queue's keys again on
 * the next add; whether its job takes an id off the counter or has its own,
 * alone or in a bulk. A numbered job takes its id off the new counter, past
 * every id its producer took before, never one left of a block the old
 * counter gave, even when a third client made the queue again first: the
 * new counter hands those ids out again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('an add to a queue obliterated by another client sets it up again and is added, numbered or with its own id', async (t) => {
  const env = await queueEnv(t);
  const name = 'gone-elsewhere';
  const writer = new Queue(name, env);
  t.after(() => writer.close());
  const other = new Queue(name, env);
  t.after(() => other.close());
  assert.equal((await writer.add('first', 0)).id, '1', 'one id taken: the next add takes a block again');
  await other.obliterate();
  const numbered = await writer.add('numbered', 'n');
  const session = await prefixSession(t, env);
  assert.ok(await session.exists(new QueueLayout(name).meta), 'the queue set up again, meta included');
  assert.equal(numbered.id, '2', 'an id past those this producer took before');
  assert.equal((await other.getJob(numbered.id))?.data, 'n');
  await other.obliterate();
  const own = await writer.add('own', 'o', { jobId: 'own' });
  assert.equal(own.id, 'own');
  assert.ok(await session.exists(new QueueLayout(name).meta), 'the queue set up again, meta included');
  assert.deepEqual(
    (await other.getJobs(['waiting'])).map((j) => [j.id, j.data]),
    [['own', 'o']],
  );
});

test('a bulk add whose ids were left of a block of the old counter takes ids of the new one, the queue made again by a third client', async (t) => {
  const env = await queueEnv(t);
  const name = 'gone-bulk';
  const writer = new Queue(name, env);
  t.after(() => writer.close());
  const other = new Queue(name, env);
  t.after(() => other.close());
  // blocks of 1, then 2, then 4: ids 4 to 7 are left in the writer's block
  await writer.add('a', 0);
  await writer.addBulk([0, 1].map((n) => ({ name: 'b', data: n })));
  assert.deepEqual(
    (await writer.addBulk([{ name: 'c', data: 0 }])).map((j) => j.id),
    ['4'],
  );
  await other.obliterate();
  const third = new Queue(name, env);
  t.after(() => third.close());
  const theirs = await third.addBulk([0, 1, 2, 3, 4, 5].map((n) => ({ name: 'theirs', data: `t${n}` })));
  const mine = await writer.addBulk([0, 1, 2].map((n) => ({ name: 'mine', data: `m${n}` })));
  const ids = [...theirs, ...mine].map((j) => j.id);
  assert.equal(new Set(ids).size, ids.length, `ids in the queue made again: ${ids.join(', ')}`);
  for (const job of [...theirs, ...mine]) {
    assert.equal((await other.getJob(job.id))?.data, job.data, `job ${job.id} is the one added`);
  }
  const waiting = await other.getJobs(['waiting']);
  assert.equal(waiting.length, 9, 'every job added once');
});
