/**
 * The `ids` counter is written by every producer of a queue: a burst of
 * them (many processes adding their first job at once) makes an unlucky
 * one meet another's block on many tries in a row. Each such conflict is
 * another client's progress, never a livelock: the counter is planned again
 * well past the usual PLAN_ATTEMPTS, and the add does not fail with
 * TooManyConflictsError.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PLAN_ATTEMPTS, QueueStore } from '@zkq/core/internal';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a client whose counter write meets another client on more than PLAN_ATTEMPTS tries still takes its ids', async (t) => {
  const env = await queueEnv(t);
  const name = 'id-contention';
  const others = await prefixSession(t, env);
  const mine = new QueueStore(await prefixSession(t, env), name);
  await mine.init();
  const handed = await new QueueStore(others, name).nextIds(1);
  // after each of this client's reads of the counter, another client takes a block first
  const bumps = PLAN_ATTEMPTS + 4;
  let met = 0;
  const getData = mine.session.getData.bind(mine.session);
  mine.session.getData = (async (path, o) => {
    const read = await getData(path, o);
    if (path === mine.layout.ids && met < bumps) {
      met++;
      handed.push(...(await new QueueStore(others, name).nextIds(1)));
    }
    return read;
  }) as typeof getData;
  handed.push(...(await mine.nextIds(2)));
  assert.equal(met, bumps, 'every try but the last met another block');
  assert.equal(handed.length, bumps + 3);
  assert.equal(new Set(handed).size, handed.length, `no id twice: ${handed.join(', ')}`);
});
