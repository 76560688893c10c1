/**
 * A Queue that obliterates its queue and adds again takes its ids from the
 * new queue's counter: ids left in a block it took from the old counter are
 * dropped with the old queue, or they would be handed out again by the new
 * counter to another producer; so is a block taken off the old counter
 * while the queue was being obliterated.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { obliterate, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

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

test('a block taken off the old counter while the queue was obliterated is not handed out in the queue made again', async (t) => {
  const session = await prefixSession(t, await queueEnv(t));
  const name = 'ids-refill-obliterated';
  const store = new QueueStore(session, name);
  assert.deepEqual(await store.nextIds(1), ['1']);
  // the next block is written to the old counter; the queue is obliterated before the store takes it
  const multi = session.multi.bind(session);
  let obliterated = false;
  session.multi = (async (ops) => {
    const written = await multi(ops);
    if (!obliterated && ops.some((op) => op.path === store.layout.ids)) {
      obliterated = true;
      await obliterate(new QueueStore(session, name), { force: true });
      store.forgetDirs(); // as obliterate does to the store it is called on
    }
    return written;
  }) as typeof multi;
  const mine = await store.nextIds(1);
  assert.ok(obliterated, 'the queue was obliterated while the block was taken');
  const others = await new QueueStore(session, name).nextIds(3);
  const ids = [...others, ...mine];
  assert.equal(new Set(ids).size, ids.length, `ids in the queue made again: ${ids.join(', ')}`);
});
