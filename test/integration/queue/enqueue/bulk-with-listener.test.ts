/**
 * A QueueEvents listener (its `added` events written in the same
 * transactions as the records) cannot make addBulk half-applied: all of it
 * or nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ZkqError } from '@zkq/core';
import { Queue, QueueEvents } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

test('addBulk with a listener: all of it or nothing, never part', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('bulk-events', env);
  t.after(() => queue.close());
  const events = new QueueEvents('bulk-events', env);
  t.after(() => events.close());
  await events.waitUntilReady();
  await queue.waitUntilReady();
  // Long names: the `added` events in the same transaction weigh about as much as the records.
  const jobs = Array.from({ length: 500 }, (_, i) => ({ name: `${i}-`.padEnd(1000, 'n'), data: { i } }));
  const outcome = await queue.addBulk(jobs).then(
    (added) => ({ added: added.length }),
    (error: unknown) => ({ error }),
  );
  const stored = await queue.getJobCounts('waiting');
  if ('error' in outcome) {
    assert.ok(
      outcome.error instanceof ZkqError && typeof outcome.error.code === 'string',
      `a typed error: ${String(outcome.error)}`,
    );
    assert.equal(stored.waiting, 0, `addBulk failed (${String(outcome.error)}) yet ${stored.waiting} jobs were added`);
  } else {
    assert.equal(outcome.added, 500);
    assert.equal(stored.waiting, 500);
  }
});
