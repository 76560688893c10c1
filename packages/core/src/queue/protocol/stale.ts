/**
 * Stale claims, the leader's side of a lease. Leases compare no two clocks:
 * the leader remembers, per claim node (its czxid), the version it last saw
 * and when it saw it change, on its own monotonic clock; a version
 * unchanged for the claim's lease duration is stale, and the revocation
 * deletes the claim *at that version*, so a renewal that lands in between
 * wins. Called by the Housekeeper.
 */
import { performance } from 'node:perf_hooks';
import { LostJobError } from '../errors.js';
import type { QueueLayout } from '../layout.js';
import { encodeRecord, type JobRecord } from '../record.js';
import { attemptRecord } from './attempt-counts.js';
import type { ClaimInfo, ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';
import { readStored } from './job-reads.js';
import { removeOrphanClaimOps } from './orphan-claims.js';

/** A claim judged stale: its node's version, the attempt's ready pointer, and the slot it names. */
export interface StaleClaim {
  id: string;
  version: number;
  /** The claim node's czxid: which claim was judged (a job's next claim starts at version 0 again). */
  czxid?: number;
  /** The attempt's ready pointer: its version is the attempt's token while the claim is there. */
  pointer: string;
  slot?: string;
}

/**
 * What the leader has seen of each claim node: its version and, on the
 * leader's monotonic clock, when that version was first seen.
 */
export class LeaseObserver {
  private readonly seen = new Map<string, { czxid: number; version: number; since: number }>();

  /**
   * Reads every claim and returns those whose version has not moved for
   * their lease duration, with the version judged. A new leader starts
   * with nothing seen: it waits a full lease before revoking anything.
   */
  async stale(store: ProtocolContext): Promise<StaleClaim[]> {
    const { session, layout } = store;
    const ids = await store.children(layout.claimsDir);
    const now = performance.now();
    const out: StaleClaim[] = [];
    const live = new Set(ids);
    for (const id of this.seen.keys()) if (!live.has(id)) this.seen.delete(id);
    await Promise.all(
      ids.map(async (id) => {
        let info: Partial<ClaimInfo>;
        let czxid: number;
        let version: number;
        try {
          const { data, stat } = await session.getData(layout.claim(id));
          info = JSON.parse(data.toString()) as Partial<ClaimInfo>;
          ({ czxid, version } = stat);
        } catch {
          return; // gone meanwhile, or not a claim zkq wrote
        }
        const seen = this.seen.get(id);
        if (!seen || seen.czxid !== czxid || seen.version !== version) {
          // A version is dated when its read returned, never earlier: a read that was
          // retried after a reconnect may return a renewal made long after `now`.
          this.seen.set(id, { czxid, version, since: performance.now() });
          return;
        }
        const lease = typeof info.lockDuration === 'number' ? info.lockDuration : Number.POSITIVE_INFINITY;
        if (now - seen.since >= lease && typeof info.pointer === 'string') {
          out.push({
            id,
            version,
            czxid,
            pointer: info.pointer,
            ...(typeof info.slot === 'string' ? { slot: info.slot } : {}),
          });
        }
      }),
    );
    return out;
  }

  /** Forgets what was seen (on losing the leadership). */
  clear(): void {
    this.seen.clear();
  }
}

/**
 * Revokes claims judged stale, each at the claim version judged and the
 * attempt's token (its pointer's version, read now: nothing else writes the
 * pointer while the claim is there): one stall more, the claim deleted.
 * A claim whose job is not there to revoke (its record or pointer gone) is
 * removed instead when it outlived its job (orphan-claims.ts), with no
 * stall. `fence` ops make a deposed leader's revocation fail (FencedError).
 * Resolves with the ids revoked.
 */
export async function revokeClaims(
  store: ProtocolContext,
  stale: StaleClaim[],
  fence: () => ProtocolOp[],
): Promise<string[]> {
  // claims removed as outliving their job, not revoked: no attempt of theirs stalled
  const orphans = new Set<string>();
  const units = stale.map((s) => ({
    id: s.id,
    build: async () => {
      // the record as stored (not getJob's view of a claimed job)
      const [read, pointer] = await Promise.all([readStored(store, s.id), store.session.exists(s.pointer)]);
      // the claim judged, read after the pointer: still there, the pointer was at its attempt's token. A job
      // given back in place keeps its pointer, and its next claim counts from version 0 again.
      const claim = await store.session.exists(store.layout.claim(s.id));
      const judged = claim?.version === s.version && (s.czxid === undefined || claim.czxid === s.czxid);
      if (!judged) throw new LostJobError(s.id); // finished, moved or gone: not this attempt
      orphans.delete(s.id);
      // a pointer made after the claim (the id added again, its lane made anew, under the same name) is no
      // pointer the claim was made through: no attempt of its job to revoke
      const later = pointer && s.czxid !== undefined && pointer.czxid > s.czxid;
      if (!read || !pointer || later) {
        // no attempt to revoke: a claim that outlived its job is removed, fenced (orphan-claims.ts)
        const orphan = await removeOrphanClaimOps(store, s);
        if (!orphan) throw new LostJobError(s.id);
        orphans.add(s.id);
        return orphan;
      }
      const { stored } = read;
      const token = pointer.version;
      const attempt = attemptRecord(stored.record, {
        pointer: s.pointer,
        token,
        at: stored.record.processedOn ?? Date.now(),
        worker: stored.record.processedBy ?? '',
      });
      const record: JobRecord = {
        ...attempt,
        state: 'waiting',
        stalledCounter: attempt.stalledCounter + 1,
        // the revocation's own write of the pointer is counted too: the next claim is no stall
        counted: { pointer: s.pointer, token: token + 1 },
      };
      const ops = revokeOps(store.layout, {
        id: s.id,
        claimVersion: s.version,
        pointer: s.pointer,
        token,
        record: encodeRecord(record),
        recordVersion: stored.version,
        slot: s.slot,
      });
      return { ops, events: [{ event: 'stalled', jobId: s.id, ts: Date.now() }], wakes: true };
    },
  }));
  // read back by its receipt (revocations are rare): sent again after a lost reply, it failed on the claim
  // it had deleted, and the job revoked went unreported
  const results = await store.executor.run(units, { fence });
  return stale.filter((s, i) => results[i]?.ok && !orphans.has(s.id)).map((s) => s.id);
}

/**
 * Revoke a stale claim (the leader): delete the claim at the version judged
 * stale (a renewal since then wins), write the ready pointer at the token,
 * which moves its version on so that the late result is fenced off, and the
 * record at the version read, one stall more. The ready pointer stays: the
 * job is claimed again. The slot named in the claim goes with it (the hung
 * worker runs on outside the count; its result will be refused).
 */
export function revokeOps(
  layout: QueueLayout,
  r: {
    id: string;
    claimVersion: number;
    pointer: string;
    token: number;
    record: Buffer;
    recordVersion: number;
    slot?: string | undefined;
  },
): ProtocolOp[] {
  const ops: ProtocolOp[] = [
    { op: 'delete', path: layout.claim(r.id), version: r.claimVersion },
    { op: 'setData', path: r.pointer, data: Buffer.alloc(0), version: r.token },
    { op: 'setData', path: layout.job(r.id), data: r.record, version: r.recordVersion },
  ];
  if (r.slot) ops.push({ op: 'delete', path: layout.slot(r.slot) });
  return ops;
}
