/**
 * Delayed containers left empty ahead of their time are removed by the
 * leader once it saw them empty for a second (empty-containers.test.ts, on
 * an idle queue). On a queue where the current hour always holds a job not
 * due yet (a steady flow of short delays), the leader's looks stop at that
 * job: they no longer walk to the containers ahead, and each forgets the
 * sightings the looks before it made there, so the containers ahead stay
 * until their hour is past (a day, for one a day ahead).
 *
 * KNOWN: fails today (todo); see the note at the test.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { testSession, waitFor } from '../../../helpers/zk.js';

const HOUR = 3_600_000;

test('an empty delayed container ahead is removed while jobs due soon keep coming', {
  todo: 'the leader walks past the current hour only when it holds no job not due yet, and a look that stops there forgets the sightings ahead',
}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('empty-busy', env);
  t.after(() => queue.close());
  const { store } = await startLeader(t, env, 'empty-busy');
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  // a job in the middle of an hour two hours ahead, removed: its hour is left empty
  const delay = (Math.floor((Date.now() + 2 * HOUR) / HOUR) + 0.5) * HOUR - Date.now();
  const hour = store.layout.delayHour(Date.now() + delay);
  const far = await queue.add('far', {}, { delay });
  assert.equal(await queue.remove(far.id), 1);
  assert.ok(await look.exists(hour));
  // a steady flow: a job due in 1.5 s every 0.5 s, so the current hour always holds one not due yet
  let flowing = true;
  const flow = (async () => {
    while (flowing) {
      await queue.add('soon', {}, { delay: 1500 });
      await sleep(500);
    }
  })();
  t.after(async () => {
    flowing = false;
    await flow;
  });
  await waitFor(async () => !(await look.exists(hour)), {
    timeoutMs: 15_000,
    what: 'the empty hour ahead removed while the flow goes on',
  });
});
