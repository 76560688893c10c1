/**
 * Pipelined adds over several turns share up to two executor runs in
 * flight. A run whose multi fails on one unit (a custom id that exists
 * already) sends the others again after its reply; a run started meanwhile
 * by later calls must not land its jobs before them (FIFO of the calls).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

test('pipelined adds over turns, each turn with an existing custom id: jobs wait in call order', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('runs-fifo', env);
  t.after(() => queue.close());
  await queue.add('dup', { n: -1 }, { jobId: 'dup' });
  const adds: Promise<unknown>[] = [];
  let n = 0;
  for (let round = 0; round < 50; round++) {
    adds.push(queue.add('dup', { n: -1 }, { jobId: 'dup' }));
    adds.push(queue.add('j', { n: n++ }));
    adds.push(queue.add('j', { n: n++ }));
    await turn();
  }
  await Promise.all(adds);
  const order = (await queue.getJobs(['waiting'], 0, -1)).map((j) => (j.data as { n: number }).n).filter((x) => x >= 0);
  assert.equal(order.length, n);
  const late = order.filter((x, i) => i > 0 && x < (order[i - 1] as number));
  assert.deepEqual(late, [], `waiting order: ${order.slice(0, 30).join(',')}…`);
});
