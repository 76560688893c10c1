/**
 * The release of claims of jobs found not claimable after all (claim.ts
 * `settleClaims`: a record gone, unreadable, or in a state no ready pointer
 * goes with). A claim node's version starts at 0 again with every claim of
 * an id, so a delete at the version read could meet another attempt's node:
 *
 * - the node is deleted only while the pointer is at the attempt's token
 *   (`at`): a claim revoked since (the pointer moved on) may be another
 *   worker's claim of the same job by then;
 * - and only while it is this claim's own, read again first (this
 *   session's, naming this claim's worker and time). The pointer alone does
 *   not tell: a session lost takes its node and leaves the pointer at the
 *   token, and one gone (dropped, the job added again under its id with a
 *   pointer of its own) tells nothing; either way the id's next claim may
 *   be another worker's, at the same version. Read as this claim's own, the
 *   node is deleted in the same session (no timer or reply can change the
 *   session between the read's reply and the delete's hand-over), and with
 *   the pointer gone nothing else deletes it meanwhile (a revocation and a
 *   finish both need the pointer).
 *
 * A release whose outcome is unknown is not sent again as it was, since it
 * would go out on the next session: the node is read again.
 */
import { NoNodeError } from '../../zk/errors.js';
import { type ReadResult, readMultiBatchSize } from '../../zk/multi-size.js';
import type { QueueLayout } from '../layout.js';
import { MAX_PROGRESS_BYTES } from '../progress.js';
import type { ClaimInfo, ProtocolContext } from './context.js';
import { OutcomeUnknownError, type ProtocolOp } from './executor.js';

/** Reads and deletes of a claim node (its outcome unknown, its pointer found gone), before it is left to its session. */
const REMOVAL_ROUNDS = 3;

/** Most bytes of a claim node: its attempt's progress, and its worker, pointer, slot and times besides. */
const CLAIM_NODE_MAX_BYTES = MAX_PROGRESS_BYTES + 4 * 1024;
/** Claim nodes read per read-only multi: a reply of nodes each full of progress stays under the packet limit. */
const CLAIM_NODES_PER_READ = readMultiBatchSize(CLAIM_NODE_MAX_BYTES);

/** A claim as made (claim.ts `PreparedClaim`): its job and the data its node was created with. */
interface MadeClaim {
  candidate: { id: string };
  claim: ClaimInfo;
}

/** A claim node's data, or undefined when it is not a claim's. */
function claimInfo(data: Buffer): Partial<ClaimInfo> | undefined {
  try {
    const info: unknown = JSON.parse(data.toString());
    return typeof info === 'object' && info !== null ? (info as Partial<ClaimInfo>) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a claim node's data names the worker and time `claim` created it with. */
function madeBy(claim: MadeClaim, info: Partial<ClaimInfo>): boolean {
  return info.worker === claim.claim.worker && info.at === claim.claim.at;
}

/**
 * Whether a claim node (its data and owner as read) is the one `claim`
 * created: this session's, naming this worker and this claim's time. Only
 * this attempt renews it, and not before its claim is settled.
 */
export function isOwnClaim(claim: MadeClaim, data: Buffer, owner: string, session: string): boolean {
  if (owner !== session) return false;
  const info = claimInfo(data);
  return info !== undefined && madeBy(claim, info);
}

/**
 * Delete a claim node at the version read (-1: any), and the slot it names:
 * a claim of a job found not claimable after all. `at`: only while
 * the attempt's pointer is at its token (a claim node's version starts at 0
 * again, so only the pointer tells this claim from a later one).
 */
export function releaseOps(
  layout: QueueLayout,
  r: { id: string; claimVersion: number; slot?: string | undefined; at?: { pointer: string; token: number } },
): ProtocolOp[] {
  const ops: ProtocolOp[] = r.at ? [{ op: 'check', path: r.at.pointer, version: r.at.token }] : [];
  ops.push({ op: 'delete', path: layout.claim(r.id), version: r.claimVersion });
  if (r.slot) ops.push({ op: 'delete', path: layout.slot(r.slot) });
  return ops;
}

/** Job `id`'s claim node, to delete while it is an attempt's own: at its pointer's token while that pointer is there (`at`). */
export interface OwnClaimNode {
  id: string;
  at?: { pointer: string; token: number } | undefined;
}

/**
 * Deletes each of `nodes`, with the slot it names, at the version read,
 * while it is this session's and `own` judges its data the attempt's (see
 * the header): one read of them all (CLAIM_NODES_PER_READ per read-only
 * multi: a claim node may hold up to MAX_PROGRESS_BYTES of progress), then
 * one run of their deletes, sent once; those whose outcome stays unknown, or
 * whose pointer went, are read again.
 */
export async function removeOwnClaims<N extends OwnClaimNode>(
  store: ProtocolContext,
  nodes: readonly N[],
  own: (node: N, info: Partial<ClaimInfo>) => boolean,
): Promise<void> {
  const { session, layout } = store;
  let left = nodes;
  for (let round = 0; round < REMOVAL_ROUNDS && left.length > 0; round++) {
    const reads: ReadResult<{ op: 'getData'; path: string }>[] = [];
    for (let i = 0; i < left.length; i += CLAIM_NODES_PER_READ) {
      const batch = left.slice(i, i + CLAIM_NODES_PER_READ);
      reads.push(
        ...(await session.readMulti(batch.map((n) => ({ op: 'getData' as const, path: layout.claim(n.id) })))),
      );
    }
    const found = left.flatMap((n, i) => {
      const read = reads[i];
      if (!read?.ok || read.stat.ephemeralOwner !== session.sessionId) return []; // gone, or another session's
      const info = claimInfo(read.data);
      if (!info || !own(n, info)) return [];
      const slot = typeof info.slot === 'string' ? info.slot : undefined;
      return [{ n, ops: releaseOps(layout, { id: n.id, claimVersion: read.stat.version, slot, at: n.at }) }];
    });
    const results = await store.executor.run(
      found.map(({ ops }) => ({ build: () => ({ ops }) })),
      { receipt: false, resend: false },
    );
    left = found.flatMap(({ n }, i) => {
      const r = results[i];
      if (r === undefined || r.ok) return [];
      if (r.error instanceof OutcomeUnknownError) return [n];
      // the pointer went: its node, read again, may be removed without it
      if (r.error instanceof NoNodeError && r.op?.op === 'check') return [{ ...n, at: undefined }];
      return []; // revoked since (the pointer moved on), or gone
    });
  }
}

/** A claim to release: at its pointer's token while that pointer is there (`at`). */
export interface Release {
  claim: MadeClaim;
  at?: { pointer: string; token: number } | undefined;
}

/** Releases each claim while its node is that claim's own, named by its worker and time (see the header). */
export function releaseClaims(store: ProtocolContext, claims: readonly Release[]): Promise<void> {
  return removeOwnClaims(
    store,
    claims.map((c) => ({ id: c.claim.candidate.id, at: c.at, claim: c.claim })),
    (c, info) => madeBy(c.claim, info),
  );
}
