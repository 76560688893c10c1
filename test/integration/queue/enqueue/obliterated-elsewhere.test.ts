/**
 * An add to a queue another client obliterated (this client's store still
 * thinks it made): it fails with NoNodeError, whether its job takes an id
 * off the counter or has its own, and brings nothing of the queue back. The
 * counter's create meeting the missing queue is no conflict to plan again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoNodeError } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('an add to a queue obliterated by another client fails with NoNodeError, numbered or with its own id', async (t) => {
  const env = await queueEnv(t);
  const name = 'gone-elsewhere';
  const writer = new Queue(name, env);
  t.after(() => writer.close());
  const other = new Queue(name, env);
  t.after(() => other.close());
  assert.equal((await writer.add('first', 0)).id, '1', 'one id taken: the next add takes a block again');
  await other.obliterate();
  await assert.rejects(writer.add('numbered', 0), NoNodeError);
  await assert.rejects(writer.add('own', 0, { jobId: 'own' }), NoNodeError);
  const session = await prefixSession(t, env);
  assert.equal(await session.exists(new QueueLayout(name).root), null, 'nothing of the queue made again');
});
