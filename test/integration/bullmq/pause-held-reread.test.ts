/**
 * BullMQ's Worker on the backend is held (no claim is sent) while the pause
 * flag is unknown: from the moment its watch fires until it is read again.
 * A read started meanwhile by another caller (a second fetch of a Worker at
 * concurrency > 1, a count) must not let a claim through before it returns
 * with the flag: the flag last read (not paused) is stale by then.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { BackendContext, SharedSession } from '../../../packages/bullmq/src/context.ts';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('a worker stays held while the pause flag is read again after a change', async (t) => {
  const env = await queueEnv(t);
  const shared = new SharedSession(env.connection, env.prefix);
  t.after(() => shared.close());
  const ctx = new BackendContext(
    'held-reread',
    {} as ConstructorParameters<typeof BackendContext>[1],
    shared,
    () => {},
  );
  const source = await ctx.source();
  const held = (source as unknown as { o: { held: () => boolean } }).o.held;
  assert.equal(await ctx.paused(), false);
  assert.equal(held(), false, 'not paused: claims go');

  const queue = new Queue('held-reread', env);
  t.after(() => queue.close());
  await queue.pause();
  await waitFor(() => held(), { what: 'the pause watch fired' });
  const reading = ctx.paused(); // another caller reads the flag again
  assert.equal(held(), true, 'held while the flag is being read again');
  assert.equal(await reading, true);
  assert.equal(held(), true, 'held: the queue is paused');
});
