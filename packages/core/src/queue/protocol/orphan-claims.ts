/**
 * Claims that outlive their job, the leader's side. A revocation goes
 * through the attempt's record and pointer (stale.ts); a claim node whose
 * job is gone has neither: a release that failed for good, or a record
 * removed under a claim by any path. Such a node stays until its worker's
 * session ends, and meanwhile the id added again cannot be claimed (the
 * claim's create fails) and reads as active. The leader removes it once it
 * has not moved for its lease (LeaseObserver, like any stale claim), at the
 * version judged, fenced so that a claim made since (of the id added again:
 * a new node, whose version counts from 0 again) is never the one deleted:
 *
 * - its record gone: only while it still is. ZooKeeper has no check of
 *   absence, so the record's path is created and deleted in the removal's
 *   transaction. An add creates the record before any claim of it can
 *   exist, so while the record is absent no claim of a job added again is
 *   there to hit;
 * - a record there that was created after the claim (its czxid is later):
 *   the claim is no attempt of it. Only a waiting one is freed (a job in
 *   another state cannot be claimed before a move that makes it waiting,
 *   and is freed then), at its ready pointer's version read before the
 *   claim: a claim of it writes that pointer, a move or a removal deletes
 *   it. The claim's own pointer, when still there (left beside the record),
 *   is checked at its version too: a claim through it writes it. That
 *   job's pointer may bear the very name the claim holds (its lane, left
 *   empty, removed and made anew): one node, made after the claim, which
 *   stale.ts therefore does not take for an attempt to revoke.
 *
 * The worker holding such a claim, if alive, runs nothing twice: a renewal
 * and a re-claim check its pointer at its token and a finish deletes it at
 * its token, and that pointer is gone (or, left beside a record of the id
 * added again, is not what that job's attempts hold); a finish with no
 * record writes a record that is not there.
 */
import { NoNodeError } from '../../zk/errors.js';
import { decodeRecord, type JobRecord } from '../record.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';
import { findPointer } from './job-reads.js';

/** A claim judged stale (stale.ts `StaleClaim`): its node's version and czxid, and what its data names. */
export interface JudgedClaim {
  id: string;
  version: number;
  czxid?: number | undefined;
  pointer: string;
  slot?: string | undefined;
}

/** The removal of a claim that outlived its job: its ops, and whether a job becomes claimable by it. */
export interface OrphanRemoval {
  ops: ProtocolOp[];
  wakes: boolean;
}

/**
 * The removal of claim `s`, judged stale, when its job is not there to
 * revoke (see the header), or undefined when it is not such a claim or is
 * not the claim judged any more. Reads everything it fences on before the
 * claim node, so a claim judged still there shows the reads came first.
 */
export async function removeOrphanClaimOps(store: ProtocolContext, s: JudgedClaim): Promise<OrphanRemoval | undefined> {
  const { session, layout } = store;
  const path = layout.job(s.id);
  const [record, own] = await session.readMulti([
    { op: 'getData', path },
    { op: 'getData', path: s.pointer },
  ] as const);
  const ops: ProtocolOp[] = [];
  let wakes = false;
  if (!record.ok) {
    if (!(record.error instanceof NoNodeError)) return undefined;
    ops.push({ op: 'create', path }, { op: 'delete', path });
  } else {
    // a record as old as the claim or older may be the claim's own job: that one is revoked, not removed
    if (s.czxid === undefined || record.stat.czxid <= s.czxid) return undefined;
    let job: JobRecord;
    try {
      job = decodeRecord(record.data, path);
    } catch {
      return undefined;
    }
    if (job.state !== 'waiting') return undefined;
    const pointer = await findPointer(store, job);
    // the claim's own pointer's name given again to that job's (its lane made anew): one node, checked once
    const same = pointer === s.pointer;
    const at = pointer === undefined ? null : same ? (own.ok ? own.stat : null) : await session.exists(pointer);
    if (!pointer || !at) return undefined;
    ops.push({ op: 'check', path: pointer, version: at.version });
    if (own.ok) {
      if (!same) ops.push({ op: 'check', path: s.pointer, version: own.stat.version });
    } else if (!(own.error instanceof NoNodeError)) return undefined;
    wakes = true;
  }
  const claim = await session.exists(layout.claim(s.id));
  if (claim?.version !== s.version || (s.czxid !== undefined && claim.czxid !== s.czxid)) return undefined;
  ops.push({ op: 'delete', path: layout.claim(s.id), version: s.version });
  if (s.slot) ops.push({ op: 'delete', path: layout.slot(s.slot) });
  return { ops, wakes };
}
