/**
 * Delayed containers left empty ahead of their time are removed by the
 * leader once it saw them empty for a second (empty-containers.test.ts, on
 * an idle queue), on a busy queue too: where the current hour always holds a
 * job not due yet (a steady flow of short delays), the leader's looks stop
 * at that job, but one per backstop period walks on to the containers
 * ahead, and the looks between keep the sightings made there. Before, no
 * look walked ahead and each forgot the sightings of the looks before it,
 * so the containers ahead stayed until their hour was past (a day, for one
 * a day ahead). What the walks ahead cost: busy-walks-ahead.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { testSession, waitFor } from '../../../helpers/zk.js';

const HOUR = 3_600_000;

test('an empty delayed container ahead is removed while jobs due soon keep coming', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const queue = new Queue('empty-busy', env);
  defer(() => queue.close());
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
  // the flow stops before the queue closes under its next add
  defer(async () => {
    flowing = false;
    await flow;
  });
  await waitFor(async () => !(await look.exists(hour)), {
    timeoutMs: 15_000,
    what: 'the empty hour ahead removed while the flow goes on',
  });
});
