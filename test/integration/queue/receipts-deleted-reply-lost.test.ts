/**
 * A batch of receipts deleted whose transaction's reply was lost after the
 * server applied it is settled by one read of the receipts, not by one
 * transaction per receipt. Sent again as it was, its first delete failed
 * (the receipt was gone), the others were sent again, and so on: a hundred
 * receipts cost a hundred transactions, five thousand deletes in all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

const WRITES = 100;

test(`${WRITES} receipts deleted in a batch whose reply was lost cost a few requests more, not one each`, async (t) => {
  const { proxy, mine, other } = await storeAcrossProxy(t, 'receipts-deleted-reply-lost');
  // a hundred transactions, one op each, each with its receipt (deleted later in a batch)
  const units = Array.from({ length: WRITES }, (_, i) => ({
    build: () => ({ ops: [{ op: 'create' as const, path: `${mine.layout.root}/n-${i}` }] }),
  }));
  await mine.executor.run(units, { maxOps: 1, inFlight: WRITES });
  assert.equal((await other.session.getChildren(other.layout.receiptsDir)).length, WRITES, 'no receipt deleted yet');
  const lost = proxy.loseReply(request(OP.multi, '/receipts/r-'));
  const before = mine.session.stats.requests;
  await within(mine.executor.flushReceipts(), 'the receipts deleted');
  assert.ok(lost.hasFired, "the deletion's reply was lost");
  assert.deepEqual(await other.session.getChildren(other.layout.receiptsDir), []);
  const spent = mine.session.stats.requests - before;
  assert.ok(spent < 20, `${spent} requests to delete the receipts after the lost reply`);
});
