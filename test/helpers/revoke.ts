/** Test helpers: a leader's revocation of a claim, done by hand. */

import { type QueueStore, revokeClaims } from '@zkq/core/internal';
import { waitFor } from './zk.js';

/**
 * Revokes job `id`'s claim as the leader does one it judged stale: the claim
 * read, then revoked at the version read. A running worker's renewal moves
 * that version on (every `lockRenewTime`): a revocation that lost the race
 * revoked nothing and is tried again, with the claim read anew.
 */
export async function revokeByHand(store: QueueStore, id: string): Promise<void> {
  await waitFor(
    async () => {
      const claim = await store.session.getData(store.layout.claim(id));
      const { pointer } = JSON.parse(claim.data.toString()) as { pointer: string };
      return (await revokeClaims(store, [{ id, version: claim.stat.version, pointer }], () => [])).includes(id);
    },
    { what: `the claim of job ${id} revoked` },
  );
}
