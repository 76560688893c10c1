/**
 * The leader's sweep of deduplication keys whose transaction's reply was
 * lost after the server applied it leaves the key a newer add made
 * meanwhile. The sweep deletes a key at the version it read, and a key
 * made again is back at version 0: sent again as it was, the delete took
 * the newer add's key, and the next add of the same id was not deduplicated.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { getDeduplicationJobId, sweepDedupKeys } from '@zkq/core/internal';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

test('a key swept whose reply was lost leaves the key a newer add made meanwhile', async (t) => {
  const { proxy, mine, other, queue } = await storeAcrossProxy(t, 'dedup-sweep-reply-lost');
  await queue.add('j', {}, { jobId: 'first', deduplication: { id: 'key-3', ttl: 50 } });
  await sleep(300); // the key's ttl has run out (judged on ZooKeeper's clock)
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, 'd-key-3'), released);
  const sweep = sweepDedupKeys(mine);
  await within(lost.fired, 'the sweep sent, its reply lost');
  // while the leader is cut off, an add makes the key again (version 0, as the one swept)
  await queue.add('j', {}, { jobId: 'second', deduplication: { id: 'key-3', ttl: 60_000 } });
  assert.equal(await getDeduplicationJobId(other, 'key-3'), 'second');
  reconnect();
  await within(sweep, 'the sweep settled');
  assert.equal(await getDeduplicationJobId(other, 'key-3'), 'second', 'the key the add made is there');
});
