/**
 * A promoter's clock stepped forward (an NTP step, a resumed VM) after it
 * measured ZooKeeper's offset: due times are still judged on ZooKeeper's
 * clock, so a delayed job is not promoted before its due time (the
 * promotion's mtime against the due time, one clock). The step lands well
 * within the 30 s between two measures.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Housekeeper, openSession, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';

const STEP_MS = 10_000;

test('a promoter whose clock is stepped forward after its measure does not promote a delayed job early', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('clock-step', env);
  t.after(() => queue.close());
  const session = await openSession(env.connection, env.prefix);
  const store = new QueueStore(session, 'clock-step');
  await store.init();
  const keeper = new Housekeeper(store, 'promoter', 60_000);
  t.after(async () => {
    await keeper.close();
    await session.close();
  });
  const promoted = new Set<string>();
  keeper.on('promoted', (ids) => {
    for (const id of ids) promoted.add(id);
  });
  const elected = nextEvent(keeper, 'elected');
  await keeper.start();
  await elected;
  await store.clock.now(); // measured: the next measure is 30 s away

  const job = await queue.add('later', {}, { delay: 4000 });
  const due = (await store.getJob(job.id))?.record.due as number;
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + STEP_MS;
  t.after(() => {
    Date.now = realNow;
  });
  await waitFor(async () => promoted.has(job.id), { timeoutMs: 60_000, what: 'the job promoted' });
  const stat = await session.exists(store.layout.job(job.id));
  assert.ok((stat?.mtime as number) >= due, `promoted at ${stat?.mtime}, ${due - (stat?.mtime as number)} ms early`);
});
