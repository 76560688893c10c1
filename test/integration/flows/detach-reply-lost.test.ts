/**
 * A child taken out of its parent's dependencies by hand whose transaction's
 * reply was lost after the server applied it answers `detached`: read back
 * by its receipt, not planned again (a new plan found the child no pending
 * dependency and answered `not-pending`, BullMQ's removeChildDependency
 * false).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detachChild } from '@zkq/core/internal';
import { FlowProducer } from '@zkq/producer';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

test('a child detached whose reply was lost answers detached', async (t) => {
  const name = 'detach-reply-lost';
  const { proxy, mine, other, env, defer } = await storeAcrossProxy(t, name);
  const flows = new FlowProducer(env);
  defer(() => flows.close());
  // two children: the detach of one leaves the parent waiting for the other
  await flows.add({
    name: 'parent',
    queueName: name,
    opts: { jobId: 'parent' },
    children: [
      { name: 'kid', queueName: name, opts: { jobId: 'kid-1', delay: 60_000 } },
      { name: 'kid', queueName: name, opts: { jobId: 'kid-2', delay: 60_000 } },
    ],
  });
  const lost = proxy.loseReply(request(OP.multi, 'kid-1'));
  assert.equal(await within(detachChild(mine, 'kid-1'), 'the detach settled'), 'detached');
  assert.ok(lost.hasFired, "the detach's reply was lost");
  assert.equal((await other.getJob('kid-1'))?.record.parentLink, undefined, 'the child forgot its parent');
  assert.equal((await other.getJob('parent'))?.record.state, 'waiting-children');
});
