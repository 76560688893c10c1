/**
 * A store whose trim collides with another store's (the pointer it picked
 * was trimmed meanwhile) must still trim the oldest job, not one of its own:
 * its own pointers need not be the oldest, and removeOnComplete's count
 * keeps the newest jobs.
 *
 * Two workers take turns (one paused while the other runs): A completes j3,
 * B completes j4 and trims j1, A completes j5 and picks j1 from its view,
 * collides, and is planned again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('removeOnComplete count: after a collision the trim still takes the oldest job', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const opts = { removeOnComplete: { count: 3 } };
  let done = 0;
  const start = () => {
    const w = new Worker('q', async () => 'ok', env);
    w.on('completed', () => {
      done++;
    });
    t.after(() => w.close());
    return w;
  };
  const w0 = start();
  const ids: string[] = [];
  const run = async (n: number) => {
    ids.push((await queue.add('j', n, opts)).id);
    await waitFor(() => done === n, { what: `j${n} to complete` });
  };
  await run(1);
  await run(2);
  await w0.close();
  const a = start();
  const b = start();
  await Promise.all([a.waitUntilReady(), b.waitUntilReady()]);
  await b.pause();
  await run(3); // by a
  await a.pause();
  b.resume();
  await run(4); // by b: trims j1
  await b.pause();
  a.resume();
  await run(5); // by a: its view still names j1
  const kept = (await queue.getJobs(['completed'], 0, -1)).map((j) => j.id).sort();
  assert.deepEqual(kept, [ids[2], ids[3], ids[4]].sort(), 'the three newest are kept');
});
