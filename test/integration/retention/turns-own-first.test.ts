/**
 * Retention by count with two stores (two workers' sessions) that finish in
 * turns, one after the other. Each turn's view lists pointers that the other
 * store trimmed since, so a plan meets them gone: a collision, then another
 * from a newer view. A store must still trim the oldest jobs then, not its
 * own ones first: those may be newer than jobs of the other store, and a
 * newer job would be trimmed while an older one stays.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { completeTurn, storesOf } from '../../helpers/turns.js';

const KEEP = 5;

test('removeOnComplete count: workers finishing in turns keep the newest jobs', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const stores = await storesOf(t, env, 2);
  const order: string[] = [];

  /** One turn: `n` new jobs claimed and completed by one store, in one batch. */
  async function turn(store: QueueStore, n: number): Promise<void> {
    order.push(...(await completeTurn(queue, store, n, KEEP)));
  }

  const [a, b] = stores as [QueueStore, QueueStore];
  const turns: [QueueStore, number][] = [
    [a, 5],
    [b, 2],
    [a, 1],
    [b, 1],
    [a, 1],
    [b, 1],
    [a, 1],
    [b, 1],
    [a, 1],
  ];
  for (const [i, [store, n]] of turns.entries()) {
    await turn(store, n);
    const kept = (await queue.getJobs(['completed'], 0, -1)).map((j) => j.id as string).sort((x, y) => +x - +y);
    assert.deepEqual(kept, order.slice(-KEEP), `after turn ${i + 1}: the last ${KEEP} to complete are kept`);
  }
});
