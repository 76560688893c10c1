/**
 * A deduplication key freed by hand whose transaction's reply was lost after
 * the server applied it: read back by its receipt, it is not sent again nor
 * planned again. Sent again as it was, the delete (of the key whatever it
 * holds) took the key another add made meanwhile; planned again, a release
 * of the key naming a job found it gone and answered 0.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deleteDeduplicationKey, getDeduplicationJobId, removeDeduplicationKey } from '@zkq/core/internal';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

test('a key deleted by hand whose reply was lost leaves the key another add made meanwhile', async (t) => {
  const { proxy, mine, other, queue } = await storeAcrossProxy(t, 'dedup-delete-reply-lost');
  await queue.add('j', {}, { jobId: 'first', deduplication: { id: 'key-1' } });
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, 'd-key-1'), released);
  const deleted = deleteDeduplicationKey(mine, 'key-1');
  await within(lost.fired, 'the delete sent, its reply lost');
  // while this client is cut off, an add takes the freed key
  await queue.add('j', {}, { jobId: 'second', deduplication: { id: 'key-1' } });
  reconnect();
  assert.equal(await within(deleted, 'the delete settled'), 1);
  assert.equal(await getDeduplicationJobId(other, 'key-1'), 'second', 'the key the add made is there');
});

test('a key released by hand whose reply was lost answers 1', async (t) => {
  const { proxy, mine, other, queue } = await storeAcrossProxy(t, 'dedup-release-reply-lost');
  await queue.add('j', {}, { jobId: 'kept', deduplication: { id: 'key-2' } });
  const lost = proxy.loseReply(request(OP.multi, 'd-key-2'));
  assert.equal(await within(removeDeduplicationKey(mine, 'key-2', 'kept'), 'the release settled'), 1);
  assert.ok(lost.hasFired, "the release's reply was lost");
  assert.equal(await getDeduplicationJobId(other, 'key-2'), null);
});
