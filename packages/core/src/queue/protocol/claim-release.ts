/**
 * The release of claims whose ready pointer is gone (claim.ts
 * `settleClaims`). A claim of a job found not claimable is deleted while
 * its pointer is at the attempt's token, which tells it from any later
 * claim of the id. With the pointer gone there is no token left to check,
 * and the node at `claims/<id>` may be another attempt's by then, at the
 * same version: this claim revoked while its pointer was there, the pointer
 * dropped, the job added again under its id with a pointer of its own and
 * claimed by another worker.
 *
 * So the node is read first, and deleted at the version read only while it
 * is this claim's own (this session's, naming this claim's worker and
 * time). Nothing else deletes it then (a revocation and a finish both need
 * the pointer), and the delete goes out on the session it was read on (no
 * timer or reply can change the session between the read's reply and the
 * delete's hand-over). A delete whose outcome is unknown is not sent again
 * as it was (a lost session takes the node with it, and the next session's
 * delete could meet another worker's claim): the node is read again.
 */
import type { ClaimInfo, ProtocolContext } from './context.js';
import { OutcomeUnknownError, type ProtocolOp } from './executor.js';

/** Reads and deletes of a claim whose delete's outcome stays unknown, before it is left to its session. */
const RELEASE_ROUNDS = 3;

/** A claim as made (claim.ts `PreparedClaim`): its job and the data its node was created with. */
interface MadeClaim {
  candidate: { id: string };
  claim: ClaimInfo;
}

/**
 * Whether a claim node (its data and owner as read) is the one `claim`
 * created: this session's, naming this worker and this claim's time. Only
 * this attempt renews it, and not before its claim is settled.
 */
export function isOwnClaim(claim: MadeClaim, data: Buffer, owner: string, session: string): boolean {
  if (owner !== session) return false;
  try {
    const info = JSON.parse(data.toString()) as Partial<ClaimInfo>;
    return info.worker === claim.claim.worker && info.at === claim.claim.at;
  } catch {
    return false;
  }
}

/** Deletes each claim's node (and the slot it holds) while it is that claim's own; see the header. */
export async function releaseWithoutPointer(
  store: ProtocolContext,
  claims: readonly { claim: MadeClaim; slot?: string | undefined }[],
): Promise<void> {
  const { session, layout } = store;
  let left = claims;
  for (let round = 0; round < RELEASE_ROUNDS && left.length > 0; round++) {
    const reads = await session.readMulti(
      left.map((c) => ({ op: 'getData' as const, path: layout.claim(c.claim.candidate.id) })),
    );
    const own = left.flatMap((c, i) => {
      const node = reads[i];
      return node?.ok && isOwnClaim(c.claim, node.data, node.stat.ephemeralOwner, session.sessionId)
        ? [{ c, version: node.stat.version }]
        : [];
    });
    const results = await store.executor.run(
      own.map(({ c, version }) => {
        const ops: ProtocolOp[] = [{ op: 'delete', path: layout.claim(c.claim.candidate.id), version }];
        if (c.slot) ops.push({ op: 'delete', path: layout.slot(c.slot) });
        return { build: () => ({ ops }) };
      }),
      { receipt: false, resend: false },
    );
    left = own
      .filter((_, i) => results[i]?.ok === false && results[i].error instanceof OutcomeUnknownError)
      .map((o) => o.c);
  }
}
