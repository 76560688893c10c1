/**
 * Receipts (one per transaction whose outcome a client must be able to read
 * back) are deleted in batches a while after their transactions: a trickle
 * of adds sends no deleting transaction per add, and a closing session
 * deletes what it still holds instead of leaving it to the leader's sweep.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

test('a trickle of adds sends one transaction per add, not a second one deleting its receipt', async (t) => {
  const env = await queueEnv(t, 30_000); // no probes in the count
  const queue = new Queue('trickle', env);
  t.after(() => queue.close());
  const session = await queue.client;
  // the queue's nodes, and blocks of ids that grow with use: the next block lasts past the count
  for (let i = 0; i < 20; i++) await queue.add('warm', i);
  const before = session.stats.requests;
  const adds = 5;
  for (let i = 0; i < adds; i++) {
    await queue.add('j', i);
    await sleep(50);
  }
  const sent = session.stats.requests - before;
  // one multi per add, plus at most a block of ids and one batch of deletions on a slow machine
  assert.ok(sent <= adds + 2, `${sent} requests for ${adds} adds`);
});

test('closing a queue deletes the receipts of its last transactions', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('closing', env);
  await queue.addBulk([{ name: 'a', data: 0 }]);
  await queue.add('b', 1);
  await queue.close();
  const session = await prefixSession(t, env);
  const left = await session.getChildren(new QueueLayout('closing').receiptsDir);
  assert.deepEqual(left, [], 'receipts left for the leader to sweep');
});
