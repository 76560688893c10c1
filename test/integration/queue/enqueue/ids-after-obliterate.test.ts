/**
 * A Queue that obliterates its queue and adds again takes its ids from the
 * new queue's counter: ids left in a block it took from the old counter are
 * dropped with the old queue, or they would be handed out again by the new
 * counter to another producer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

test('after obliterate, a Queue adds with ids of the new counter, not ids left from the old one', async (t) => {
  const env = await queueEnv(t);
  const name = 'ids-obliterated';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  // blocks of 1, then 2: one id of the second block is left
  const before = [];
  for (let n = 0; n < 2; n++) before.push((await queue.add('before', n)).id);
  assert.deepEqual(before, ['1', '2']);
  await queue.obliterate();
  const other = new Queue(name, env);
  t.after(() => other.close());
  const jobs = [];
  for (let n = 0; n < 3; n++) jobs.push(await other.add('other', n));
  const mine = await queue.add('mine', 'mine');
  const ids = [...jobs.map((j) => j.id), mine.id];
  assert.equal(new Set(ids).size, ids.length, `ids in the queue made again: ${ids.join(', ')}`);
  assert.equal((await queue.getJob(mine.id))?.data, 'mine', 'the job added is the one stored');
  for (const [n, job] of jobs.entries()) assert.equal((await queue.getJob(job.id))?.data, n);
});
