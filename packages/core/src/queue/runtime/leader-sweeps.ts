/**
 * LeaderSweeps: what the elected Housekeeper does besides promoting, on
 * its `stalledInterval` timer:
 * - revokes stale claims: a claim whose version (its renewals) has not moved
 *   for its lease duration on the leader's own monotonic clock, deleted at
 *   the version judged (see LeaseObserver); the job is claimed again and
 *   fails past maxStalledCount;
 * - every `sweepMs`, removes receipts left by clients that died before
 *   deleting them, the dependency nodes of parents that retention trimmed,
 *   the log nodes of jobs that are gone (a few shards a pass), cancel
 *   requests whose attempt ended before its worker saw them, and
 *   deduplication keys whose ttl ran out or whose job is gone (with their
 *   empty shards); fails the parents a flow add cut off midway left waiting
 *   (protocol/flow-add-split.ts).
 * Every write carries the election's fence (`fence`): a deposed leader's
 * writes fail instead of racing the new one's.
 */
import { performance } from 'node:perf_hooks';
import {
  DEDUP_SWEEP_SHARDS,
  LeaseObserver,
  LOG_SWEEP_SHARDS,
  type MarkSightings,
  type ProtocolOp,
  releaseCutFlows,
  revokeClaims,
  sweepCancels,
  sweepDedupKeys,
  sweepOrphanDeps,
  sweepOrphanLogs,
  sweepReceipts,
} from '../protocol/index.js';
import type { QueueStore } from '../store.js';

export class LeaderSweeps {
  private readonly observer = new LeaseObserver();
  /** Marks of split flow adds, as last seen (cut-off adds are judged on this process's clock). */
  private readonly flowAdds: MarkSightings = new Map();
  /** Receipts seen by earlier sweeps, with the sweep that first saw them. */
  private readonly receipts = new Map<string, number>();
  private sweeps = 0;
  private lastSweep = 0;
  /** The deduplication key shard the next sweep starts at. */
  private dedupFrom: string | undefined;
  /** The log shard the next sweep starts at. */
  private logsFrom: string | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly fence: () => ProtocolOp[],
    /** How often the leftovers are swept, ms. */
    private readonly sweepMs: number,
  ) {}

  /** A term begins: the first sweep comes `sweepMs` from now. */
  begin(): void {
    this.lastSweep = performance.now();
  }

  /** A term ends: the leases judged so far are forgotten (the next term judges them afresh). */
  end(): void {
    this.observer.clear();
  }

  /** Revokes every claim whose lease ran out unrenewed while `leading()`; resolves with their ids. */
  async revokeStale(leading: () => boolean): Promise<string[]> {
    const stale = await this.observer.stale(this.store);
    if (stale.length === 0 || !leading()) return [];
    return revokeClaims(this.store, stale, this.fence);
  }

  /** Sweeps the leftovers, once `sweepMs` has passed since the last sweep, while `leading()`. */
  async maybeSweep(leading: () => boolean): Promise<void> {
    if (!leading() || performance.now() - this.lastSweep < this.sweepMs) return;
    this.lastSweep = performance.now();
    await sweepReceipts(this.store, this.receipts, ++this.sweeps);
    await sweepOrphanDeps(this.store, this.fence);
    await releaseCutFlows(this.store, this.fence, this.flowAdds, performance.now());
    const logs = await sweepOrphanLogs(this.store, this.fence, { from: this.logsFrom, shards: LOG_SWEEP_SHARDS });
    this.logsFrom = logs.next;
    await sweepCancels(this.store, this.fence);
    const keys = await sweepDedupKeys(this.store, this.fence, { from: this.dedupFrom, shards: DEDUP_SWEEP_SHARDS });
    this.dedupFrom = keys.next;
  }
}
