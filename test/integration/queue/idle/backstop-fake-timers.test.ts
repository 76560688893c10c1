/**
 * A worker's Backstop keeps its own timers: a process that fakes the global
 * ones and jumps its clock (BullMQ's suite jumps it a month per job) must not
 * run every look that month would hold, one after the other, inside the jump.
 * A leader's part reads nothing at a look, so each look ended at once and
 * armed the next one, which the same jump ran again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore } from '@zkq/core/internal';
import { backstopOf } from '../../../../packages/core/src/queue/runtime/backstop.ts';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const MONTH_MS = 31 * 24 * 3600 * 1000;

test("faked global timers jumped a month: the Backstop's looks do not run in the jump", async (t) => {
  const env = await queueEnv(t);
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'backstop-jump');
  await store.init();
  let looks = 0;
  t.mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => t.mock.timers.reset());
  const leave = backstopOf(store).add({
    reads: () => {
      looks++;
      return []; // a leader's part: nothing to read
    },
    seen: () => undefined,
  });
  t.after(leave);
  for (let i = 0; i < 3; i++) t.mock.timers.tick(MONTH_MS);
  assert.ok(looks <= 1, `${looks} looks ran in three jumps of a month`);
});
