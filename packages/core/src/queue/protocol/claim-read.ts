/**
 * The read of claimed records in the same flight as their claim. A claim
 * round is the claim multi, then a read-only multi of each claimed record
 * with its claim node (claim.ts `settleClaims`). ZooKeeper answers one
 * connection's requests in the order they came, so a read handed to the
 * session right after the claim multi, before its reply, is processed after
 * the claim committed and sees what a read sent after the reply would: one
 * round trip per round where there were two.
 *
 * Such a read is used only when it certainly came after the claim:
 *
 * - the claim's own reply came (a claim settled by its receipt, its reply
 *   lost, is read after it as before);
 * - the session's connection did not change from the moment the claim multi
 *   was handed over to the read's reply (`Session.connection`): neither was
 *   sent again on another connection, where a read sent again after a
 *   connection loss could go ahead of a claim sent again after it;
 * - it was sent beside the multi that committed the claim. A multi that
 *   failed (a candidate another worker took first: NodeExists, nothing
 *   applied) is sent again without that candidate; the read beside the
 *   failed one saw no claim of the others (their claim nodes absent, or
 *   another worker's) and their records before the claim that took them,
 *   so it is thrown away, and the multi sent again gets a read of its own;
 * - it shows the claim node this claim created (this session's, with this
 *   claim's data). A read-only multi of the session is processed after the
 *   session's writes sent before it and before those sent after it, so a
 *   read that saw the claim's own node read the record after the claim too,
 *   whatever the order the requests were handed over in.
 *
 * Otherwise the records are read after the claim, as before. Either way a
 * record is read with its claim node, and judged by settleClaims alike.
 */
import type { ReadResult } from '../../zk/multi-size.js';
import type { Session } from '../../zk/session.js';
import type { QueueLayout } from '../layout.js';

/** A claim as read here: the candidate it took (claim.ts `PreparedClaim`). */
interface Claim {
  candidate: { id: string; pointer: string };
}

/** A claimed job's record and claim node, as a read-only multi gives them. */
export type ClaimRead = [
  record: ReadResult<{ op: 'getData'; path: string }>,
  claim: ReadResult<{ op: 'getData'; path: string }>,
];

/** Records read per request: a claim batch is read in one or a few read-only multis. */
export const CLAIM_READ_BATCH = 50;

/** The reads of `claims`: each one's record, then its claim node; its ready pointer first `withPointer`. */
function claimReads(layout: QueueLayout, claims: readonly Claim[], withPointer = false) {
  return claims.flatMap(({ candidate }) =>
    [...(withPointer ? [candidate.pointer] : []), layout.job(candidate.id), layout.claim(candidate.id)].map((path) => ({
      op: 'getData' as const,
      path,
    })),
  );
}

/**
 * The reads sent beside a run's claim multis: `sent` is the run's hook
 * (`RunOptions.sent`), `of` the read a committed claim may use.
 */
export class BesideReads<C extends Claim> {
  private readonly reads = new Map<C, Promise<ClaimRead | undefined>>();

  constructor(
    private readonly session: Session,
    private readonly layout: QueueLayout,
  ) {}

  /** A claim multi of `units` was handed to the session: their records and claim nodes are read right behind it. */
  readonly sent = (units: readonly { claim: C }[]): void => {
    const connection = this.session.connection;
    for (let i = 0; i < units.length; i += CLAIM_READ_BATCH) {
      const claims = units.slice(i, i + CLAIM_READ_BATCH).map((u) => u.claim);
      const read = this.session.readMulti(claimReads(this.layout, claims)).then(
        // answered on the connection the claim went out on, nothing sent again: after the claim
        (replies) => (this.session.connection === connection ? replies : undefined),
        () => undefined,
      );
      claims.forEach((c, j) => {
        // sent again: the read beside the multi sent before is stale
        this.reads.set(
          c,
          read.then((r) => r && ([r[2 * j], r[2 * j + 1]] as ClaimRead)),
        );
      });
    }
  };

  /** The read beside the last multi `claim` was sent in, for a claim committed with its reply. */
  of(claim: C): Promise<ClaimRead | undefined> | undefined {
    return this.reads.get(claim);
  }
}

/**
 * The record and claim node of each of `claims` (committed), in order: the
 * read beside its claim where it is usable (see the header), else read now,
 * after the claim, in one read-only multi for all of them.
 */
export async function readClaimed<
  C extends { claim: Claim; token: unknown; beside?: Promise<ClaimRead | undefined> | undefined },
>(
  session: Session,
  layout: QueueLayout,
  claims: readonly C[],
  own: (claim: C, node: { data: Buffer; stat: { ephemeralOwner: string } }) => boolean,
): Promise<ClaimRead[]> {
  const got = await Promise.all(
    claims.map(async (c) => {
      const read = c.token === undefined ? undefined : await c.beside;
      const node = read?.[1];
      return node?.ok && own(c, node) ? read : undefined;
    }),
  );
  const missing = claims.filter((_, i) => got[i] === undefined).map((c) => c.claim);
  if (missing.length === 0) return got as ClaimRead[];
  const replies = await session.readMulti(claimReads(layout, missing));
  let k = 0;
  return got.map((r) => {
    if (r) return r;
    const read: ClaimRead = [replies[2 * k], replies[2 * k + 1]] as ClaimRead;
    k++;
    return read;
  });
}

/** Claims settled by their receipts (no reply, no token): each one's pointer, record and claim node, in one read-only multi. */
export function readWithPointer(session: Session, layout: QueueLayout, claims: readonly { claim: Claim }[]) {
  const reads = claimReads(
    layout,
    claims.map((c) => c.claim),
    true,
  );
  return reads.length === 0 ? Promise.resolve([]) : session.readMulti(reads);
}
