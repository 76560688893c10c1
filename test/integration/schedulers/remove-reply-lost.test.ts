/**
 * A scheduler removed whose transaction's reply was lost after the server
 * applied it answers true: read back by its receipt, not planned again (a
 * new plan found no scheduler and answered false).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { readScheduler, removeScheduler } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

const { Queue } = withBackend(createZooKeeperBackend);

test('a scheduler removed whose reply was lost answers true', async (t) => {
  const name = 'scheduler-remove-reply-lost';
  const { proxy, mine, other, env, defer } = await storeAcrossProxy(t, name);
  const queue = new Queue(name, { connection: { ...env.connection, namespace: env.prefix } });
  defer(() => queue.close());
  await queue.upsertJobScheduler('nightly', { every: 3_600_000 }, { name: 'tick' });
  const lost = proxy.loseReply(request(OP.multi, 's-nightly'));
  assert.equal(await within(removeScheduler(mine, 'nightly'), 'the removal settled'), true);
  assert.ok(lost.hasFired, "the removal's reply was lost");
  assert.equal(await readScheduler(other, 'nightly'), undefined);
});
