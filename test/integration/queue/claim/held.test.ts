/**
 * A worker asks whether it may still take jobs right before its claim is
 * sent (`held`): a pause seen while the head was read (its watch fires
 * before the add's) then claims nothing, and the jobs stay waiting for a
 * worker that may run them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobSource, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a worker held between the read of the head and the claim claims nothing', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('held', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'j', data: i })));
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'held');
  await store.init();
  let held = false;
  const source = new JobSource(store, () => [], {
    workerId: 'w',
    lockDuration: 600_000,
    idlePollMs: 1000,
    onWarning: () => {},
    held: () => held,
  });
  // the worker is told to stop (a pause, a close) once the head is read
  const readMulti = session.readMulti.bind(session);
  session.readMulti = (async (ops: Parameters<typeof readMulti>[0]) => {
    const replies = await readMulti(ops);
    held = true;
    return replies;
  }) as typeof session.readMulti;

  const first = await source.take(5);
  assert.deepEqual(first, [], 'nothing claimed');
  assert.equal((await queue.getJobCounts('waiting')).waiting, 5, 'every job still waits');
  assert.equal((await session.getChildren(store.layout.claimsDir)).length, 0, 'no claim node');

  session.readMulti = readMulti;
  held = false;
  const second = await source.take(5);
  assert.ok(Array.isArray(second));
  assert.equal(second.length, 5, 'claimed once free again');
});
