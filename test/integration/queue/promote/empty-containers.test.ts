/**
 * Delayed containers left empty before their time (their jobs removed or
 * promoted by hand, a day whose hours went) are removed by the leader once
 * it saw them empty for a while; before, they stayed until their hour or
 * day was past, and every reserve's Backstop read found them and walked
 * them. A removal never races an add into the container: the add's create
 * meets NoNode and makes the container again (or the removal meets
 * NotEmpty), so the job is not lost.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { testSession, waitFor } from '../../../helpers/zk.js';

const HOUR = 3_600_000;

test('delayed containers left empty ahead of their time are removed by the leader', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('empty-ahead', env);
  t.after(() => queue.close());
  const { store } = await startLeader(t, env, 'empty-ahead');
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const { layout } = store;
  // a job two hours ahead, removed; an empty day of today's (its hours gone); an empty bucket a day ahead
  const job = await queue.add('later', {}, { delay: 2 * HOUR });
  assert.equal(await queue.remove(job.id), 1);
  const now = Date.now();
  await look.ensurePath(layout.delayDay(now));
  await look.ensurePath(layout.bucketOf(layout.delayHour(now + 26 * HOUR), 0));
  assert.ok((await look.getChildren(layout.delayedDir)).length > 0);
  await waitFor(async () => (await look.getChildren(layout.delayedDir)).length === 0, {
    what: 'every empty delayed container removed',
  });
});

test('a job delayed into a container the leader is removing is not lost', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('empty-race', env);
  t.after(() => queue.close());
  const { store } = await startLeader(t, env, 'empty-race');
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const { layout } = store;
  // the producer knows the container of a job two hours ahead; the job goes, and so does its container
  const first = await queue.add('first', {}, { delay: 2 * HOUR });
  const hour = layout.delayHour(Date.now() + 2 * HOUR);
  assert.ok(await look.exists(hour));
  const session = await queue.client;
  const multi = session.multi.bind(session);
  let held = false;
  session.multi = async (ops) => {
    if (!held && ops.some((op) => op.op === 'create' && op.path.startsWith(`${hour}/`))) {
      held = true; // the add, planned into the container the producer knows, is sent once it is gone
      await waitFor(async () => !(await look.exists(hour)), { what: 'the container removed under the add' });
    }
    return multi(ops);
  };
  assert.equal(await queue.remove(first.id), 1);
  const second = await queue.add('second', {}, { delay: 2 * HOUR });
  assert.ok(held, 'the add was held until its container was removed');
  const job = await queue.getJob(second.id);
  assert.equal(await job?.getState(), 'delayed');
  const pointers = await Promise.all((await look.getChildren(hour)).map((b) => look.getChildren(`${hour}/${b}`)));
  assert.equal(
    pointers.flat().filter((n) => n.endsWith(second.id)).length,
    1,
    'its pointer is in the container made again',
  );
});
