/**
 * A ready pointer left without its record is not a collision (the worker
 * does not spread or scan again for it), but the idle wait's own look at the
 * head still finds it and ends the wait at once: a lone worker goes round
 * (scan, read the record, wait, look, wake) without a pause, for as long as
 * the pointer stays, instead of waiting for the next job or its idle poll.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { JobSource, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a pointer without its record does not end the idle wait of a lone worker', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('gone', env);
  t.after(() => queue.close());
  const job = await queue.add('j', {});
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'gone');
  await store.init();
  await session.delete(store.layout.job(job.id as string)); // the pointer stays, its record is gone
  const source = new JobSource(store, () => [], {
    workerId: 'w',
    lockDuration: 600_000,
    idlePollMs: 600_000,
    onWarning: () => {},
  });
  t.after(() => source.poke());

  assert.deepEqual(await source.take(1), [], 'the candidate is skipped: its record is gone');
  // the view of the head grows old before the next take, as it does when a loaded machine's round
  // trips outlast its age: that take scans the head again, and lists the pointer again
  await sleep(VIEW_OUTDATED_MS);
  assert.equal(await source.take(1), 'idle', 'then nothing is claimable');
  // nothing new comes and the poll is ten minutes away: the wait lasts (the bound only ends the test)
  const woke = await Promise.race([
    source.waitForWork().then(() => 'woke' as const),
    sleep(3000).then(() => 'waiting' as const),
  ]);
  source.poke();
  assert.equal(woke, 'waiting', 'the idle wait is not ended by the pointer without a record');
  assert.deepEqual(await readyPointers(store), [], 'the pointer without a record was dropped');
});

test('a pointer without its record is kept once the id has a record again; that job wakes the idle wait', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('gone-again', env);
  t.after(() => queue.close());
  await queue.add('j', { v: 1 }, { jobId: 'x' });
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'gone-again');
  await store.init();
  await session.delete(store.layout.job('x'));
  const source = new JobSource(store, () => [], {
    workerId: 'w',
    lockDuration: 600_000,
    idlePollMs: 600_000,
    onWarning: () => {},
  });
  t.after(() => source.poke());
  assert.deepEqual(await source.take(1), [], 'the candidate is skipped: its record is gone');
  const [orphan] = await readyPointers(store);
  // added again under its id: a record, and a pointer of its own
  await queue.add('j', { v: 2 }, { jobId: 'x' });
  const woke = await Promise.race([
    source.waitForWork().then(() => 'woke' as const),
    sleep(10_000, 'waiting' as const, { ref: false }),
  ]);
  source.poke();
  assert.equal(woke, 'woke', 'the job added again is work');
  const pointers = await readyPointers(store);
  assert.equal(pointers.length, 2, 'nothing was dropped while the id has a record');
  assert.ok(orphan && pointers.includes(orphan));
  assert.deepEqual((await store.getJob('x'))?.record.data, { v: 2 });
});

/** Longer than the age past which a take scans the head again (HeadView's VIEW_MAX_AGE_MS, 100 ms). */
const VIEW_OUTDATED_MS = 250;

/** Every ready pointer of the queue's plain lane. */
async function readyPointers(store: QueueStore): Promise<string[]> {
  const lane = store.layout.lane('p-0000000000');
  const out: string[] = [];
  for (const b of await store.session.getChildren(lane).catch(() => [])) {
    for (const n of await store.session.getChildren(`${lane}/${b}`)) out.push(`${lane}/${b}/${n}`);
  }
  return out.sort();
}
