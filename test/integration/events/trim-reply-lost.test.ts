/**
 * The event log trimmed by hand (BullMQ's trimEvents) whose transaction's
 * reply was lost after the server applied it answers every node it
 * deleted: read back by its receipt. Sent again as it was, each delete
 * failed on the node it had deleted, and the trim answered 0.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logEvents, trimEventLog } from '@zkq/core/internal';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

test('an event log trimmed whose reply was lost answers the nodes it deleted', async (t) => {
  const { proxy, mine, other } = await storeAcrossProxy(t, 'trim-reply-lost');
  for (let i = 0; i < 5; i++) await logEvents(other, [{ event: 'custom', n: String(i), ts: Date.now() }]);
  const lost = proxy.loseReply(request(OP.multi, '/events/log/'));
  assert.equal(await within(trimEventLog(mine, 1), 'the trim settled'), 4);
  assert.ok(lost.hasFired, "the trim's reply was lost");
  assert.equal((await other.session.getChildren(other.layout.eventLog)).length, 1);
});
