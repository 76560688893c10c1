/**
 * The leader's looks follow its watches while containers ahead are made and
 * emptied beside them: jobs added hours (and a day) ahead and removed again,
 * and jobs due in a few seconds, added meanwhile, all promoted with no
 * backstop to fall back on (no add ahead, no removal, hides one due soon).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const HOUR = 3_600_000;
/** How long jobs due soon are added for, ms. */
const ADDING_MS = 8000;

test('jobs due soon are promoted while delayed containers ahead are made and removed', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('churn-ahead', env);
  const churner = new Queue('churn-ahead', env);
  t.after(() => queue.close());
  t.after(() => churner.close());
  // only a watch or a due time it knows can wake it: its backstop is stretched
  const { keeper } = await startLeader(t, env, 'churn-ahead', { promotePollMs: 600_000 });
  const promoted = new Map<string, number>();
  keeper.on('promoted', (ids) => {
    for (const id of ids) promoted.set(id, Date.now());
  });
  let adding = true;
  const churn = (async () => {
    while (adding) {
      const ahead = [2 * HOUR, 3 * HOUR, 26 * HOUR][Math.floor(Math.random() * 3)] as number;
      const far = await churner.add('far', {}, { delay: ahead });
      await sleep(Math.random() * 1500);
      assert.equal(await churner.remove(far.id), 1);
      await sleep(Math.random() * 300);
    }
  })();
  const due = new Map<string, number>();
  const end = Date.now() + ADDING_MS;
  while (Date.now() < end) {
    const delay = 200 + Math.floor(Math.random() * 2500);
    const job = await queue.add('near', {}, { delay });
    due.set(job.id, Date.now() + delay);
    await sleep(Math.random() * 700);
  }
  adding = false;
  await churn;
  await waitFor(() => [...due.keys()].every((id) => promoted.has(id)), {
    timeoutMs: 20_000,
    what: 'every job due soon promoted',
  });
  const late = [...due].map(([id, at]) => (promoted.get(id) as number) - at);
  t.diagnostic(`${late.length} jobs promoted, at most ${Math.max(...late)} ms past their due time`);
});
