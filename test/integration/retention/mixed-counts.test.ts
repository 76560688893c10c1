/**
 * Retention by count where jobs of one queue carry different counts
 * (removeOnComplete per job, or workers with different options), finished
 * by several stores (workers' sessions) in turns. As on BullMQ, each finish
 * keeps the newest jobs up to its own count: after every turn the set is
 * the newest jobs, as many as the last count allows, never fewer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { completeTurn, storesOf } from '../../helpers/turns.js';

test('removeOnComplete counts 1 to 5 across three stores in turns: the newest jobs, as many as the last count', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const stores = await storesOf(t, env, 3);
  const order: string[] = [];
  let size = 0;

  /** `n` new jobs claimed and completed by `store` with `count`, in one batch. */
  async function turn(store: QueueStore, n: number, count: number): Promise<void> {
    order.push(...(await completeTurn(queue, store, n, count)));
    size = Math.min(count, size + n);
  }

  // a fixed sequence of (store, jobs, count): every store meets counts above and below the others'
  const plan: [number, number, number][] = [
    [0, 5, 5],
    [1, 1, 1],
    [2, 2, 3],
    [0, 1, 5],
    [1, 2, 2],
    [2, 1, 4],
    [0, 3, 5],
    [1, 1, 1],
    [0, 2, 5],
    [2, 3, 3],
    [1, 4, 4],
    [0, 1, 2],
    [2, 1, 5],
    [1, 1, 5],
    [0, 1, 5],
  ];
  for (const [i, [s, n, count]] of plan.entries()) {
    await turn(stores[s] as QueueStore, n, count);
    const kept = (await queue.getJobs(['completed'], 0, -1)).map((j) => j.id as string).sort((x, y) => +x - +y);
    assert.deepEqual(kept, order.slice(-size), `after turn ${i + 1} (count ${count}): the newest ${size} are kept`);
  }
});
