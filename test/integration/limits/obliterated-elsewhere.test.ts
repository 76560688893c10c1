/**
 * Limits written to a queue another client obliterated (this client's store
 * still thinks it made): a manual rate-limit window and a setting fail with
 * NoNodeError at once and bring nothing of the queue back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoNodeError, type Session } from '@zkq/core';
import { obliterate, QueueStore, setGlobalConcurrency, setRateLimit } from '@zkq/core/internal';
import { queueEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

test('a rate-limit window or a setting written to a queue obliterated elsewhere fails with NoNodeError', async (t) => {
  const env = await queueEnv(t);
  const mine = new QueueStore((await prefixSession(t, env)) as Session, 'gone');
  await mine.init();
  const other = new QueueStore((await prefixSession(t, env)) as Session, 'gone');
  await obliterate(other, { force: true });
  await assert.rejects(setRateLimit(mine, 1000), NoNodeError);
  await assert.rejects(setGlobalConcurrency(mine, 2), NoNodeError);
  assert.equal(await other.session.exists(other.layout.root), null, 'nothing of the queue made again');
});
