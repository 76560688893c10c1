/**
 * A revocation of a stale claim whose transaction's reply was lost after the
 * server applied it answers the job revoked (the leader then reports it
 * `stalled`): read back by its receipt. Sent again as it was, it failed on
 * the claim it had deleted and left the job out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, revokeClaims, scanHead } from '@zkq/core/internal';
import { OP, request } from '../../../helpers/fault-proxy.js';
import { within } from '../../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../../helpers/reply-lost.js';

test('a revocation whose reply was lost answers the job revoked', async (t) => {
  const { proxy, mine, other, queue } = await storeAcrossProxy(t, 'revoke-reply-lost');
  await queue.add('j', {}, { jobId: 'hung-1' });
  const head = await scanHead(other, { limit: 10, exclude: new Set() });
  const { claimed } = await claimJobs(other, head, { workerId: 'hung', lockDuration: 60_000 });
  assert.equal(claimed.length, 1, 'the job claimed by a worker that will not renew it');
  const claim = await other.session.getData(other.layout.claim('hung-1'));
  const { pointer } = JSON.parse(claim.data.toString()) as { pointer: string };
  const lost = proxy.loseReply(request(OP.multi, '/claims/hung-1'));
  const revoked = await within(
    revokeClaims(mine, [{ id: 'hung-1', version: claim.stat.version, pointer }], () => []),
    'the revocation settled',
  );
  assert.ok(lost.hasFired, "the revocation's reply was lost");
  assert.deepEqual(revoked, ['hung-1']);
  assert.equal(await other.session.exists(other.layout.claim('hung-1')), null, 'the claim is gone');
});
