/**
 * Housekeeper: the work one elected worker does for the whole queue.
 *
 * Worker daemons join the election under `leader/` (LeaderElection). The
 * leader
 * - revokes stale claims every `stalledInterval`: a claim whose version (its
 *   renewals) has not moved for its lease duration on the leader's own
 *   monotonic clock, deleted at the version judged (see LeaseObserver in
 *   @zkq/core); the job is claimed again and fails past maxStalledCount;
 * - promotes delayed jobs when they are due, on ZooKeeper's clock (ServerClock,
 *   so a leader with a skewed clock is neither early nor late): it sleeps until the earliest due
 *   time (at most PROMOTE_POLL_MS), woken early by watches on the delayed
 *   containers. A failed promotion is retried after a pause, for as long as
 *   it leads;
 * - removes receipts left by clients that died before deleting them, the
 *   dependency nodes of parents that retention trimmed, the log nodes of jobs
 *   that are gone (a few shards a pass), cancel requests
 *   whose attempt ended before its worker saw them, and deduplication keys
 *   whose ttl ran out or whose job is gone (with their empty shards).
 * Every write carries the election's fence: a deposed leader's writes fail
 * instead of racing the new one's, so two leaders never act at once.
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { LeaderElection } from '../../recipes/leader-election.js';
import {
  DEDUP_SWEEP_SHARDS,
  FencedError,
  LeaseObserver,
  LOG_SWEEP_SHARDS,
  type ProtocolOp,
  promoteDue,
  revokeClaims,
  sweepCancels,
  sweepDedupKeys,
  sweepOrphanDeps,
  sweepOrphanLogs,
  sweepReceipts,
} from '../protocol/index.js';
import type { QueueStore } from '../store.js';
import type { ServerClock } from './server-clock.js';

/** Longest sleep of the promoter while delayed jobs may exist, ms. */
const PROMOTE_POLL_MS = 1000;
/** Pause after a failed promotion round, ms. */
const PROMOTE_RETRY_MS = 500;
/** How often receipts are swept, ms. */
const RECEIPT_SWEEP_MS = 60_000;

export interface HousekeeperEvents {
  elected: [];
  deposed: [];
  stalled: [jobId: string];
  promoted: [jobIds: string[]];
  error: [error: unknown];
}

export class Housekeeper extends EventEmitter<HousekeeperEvents> {
  private readonly election: LeaderElection;
  private readonly observer = new LeaseObserver();
  /** Due times are judged on ZooKeeper's clock, not this process's. */
  private get clock(): ServerClock {
    return this.store.clock;
  }
  private stalledTimer: NodeJS.Timeout | undefined;
  private promoting: Promise<void> | undefined;
  private wakePromoter: (() => void) | undefined;
  /** A watch on the delayed containers fired since the promoter's pass began. */
  private delayedChanged = false;
  /** Counts terms of leadership: a loop of an earlier term stops by itself. */
  private term = 0;
  private leading = false;
  private checking = false;
  private lastSweep = 0;
  /** Receipts seen by earlier sweeps, with the sweep that first saw them. */
  private readonly receipts = new Map<string, number>();
  private sweeps = 0;
  /** The deduplication key shard the next sweep starts at. */
  private dedupFrom: string | undefined;
  /** The log shard the next sweep starts at. */
  private logsFrom: string | undefined;

  constructor(
    private readonly store: QueueStore,
    workerId: string,
    private readonly stalledInterval: number,
    /** Longest sleep of the promoter, ms (tests stretch it to prove that watches wake it). */
    private readonly promotePollMs = PROMOTE_POLL_MS,
    /** How often receipts, orphans, cancel requests and deduplication keys are swept, ms (tests shorten it). */
    private readonly sweepMs = RECEIPT_SWEEP_MS,
  ) {
    super();
    this.election = new LeaderElection(store.session, store.layout.leaderDir, { id: workerId });
    this.election.on('elected', () => this.lead());
    this.election.on('deposed', () => this.stepDown());
  }

  get isLeader(): boolean {
    return this.leading;
  }

  async start(): Promise<void> {
    await this.election.start();
  }

  /**
   * Steps down and leaves the election. A promotion pass in flight is not
   * waited for: once the election node is gone its writes fail their fence,
   * and once the session closes its reads end; waiting for it would hold
   * close() up for as long as its reads are retried (half a minute while
   * ZooKeeper is unreachable).
   */
  async close(): Promise<void> {
    this.stepDown();
    await this.election.close();
  }

  private readonly fence = (): ProtocolOp[] => [{ ...this.election.fence(), role: 'fence' }];

  private lead(): void {
    if (this.leading) return;
    this.leading = true;
    const term = ++this.term;
    this.emit('elected');
    this.lastSweep = performance.now();
    this.stalledTimer = setInterval(() => {
      if (this.checking) return;
      this.checking = true;
      this.checkStalled()
        .then(() => this.maybeSweep())
        .catch((err) => this.report(err))
        .finally(() => {
          this.checking = false;
        });
    }, this.stalledInterval);
    this.stalledTimer.unref();
    // One promote loop at a time: a loop of an earlier term ends before this one starts.
    const previous = this.promoting ?? Promise.resolve();
    this.promoting = previous.then(() => this.promoteLoop(term));
  }

  private stepDown(): void {
    if (!this.leading) return;
    this.leading = false;
    this.term++;
    clearInterval(this.stalledTimer);
    this.observer.clear();
    this.wakePromoter?.();
    this.emit('deposed');
  }

  private report(err: unknown): void {
    if (this.leading && !(err instanceof FencedError)) this.emit('error', err);
  }

  /** Revokes every claim whose lease ran out unrenewed; resolves with their ids. */
  async checkStalled(): Promise<string[]> {
    if (!this.leading) return [];
    const stale = await this.observer.stale(this.store);
    if (stale.length === 0 || !this.leading) return [];
    const revoked = await revokeClaims(this.store, stale, this.fence);
    for (const id of revoked) this.emit('stalled', id);
    return revoked;
  }

  private async maybeSweep(): Promise<void> {
    if (!this.leading || performance.now() - this.lastSweep < this.sweepMs) return;
    this.lastSweep = performance.now();
    await sweepReceipts(this.store, this.receipts, ++this.sweeps);
    await sweepOrphanDeps(this.store, this.fence);
    const logs = await sweepOrphanLogs(this.store, this.fence, { from: this.logsFrom, shards: LOG_SWEEP_SHARDS });
    this.logsFrom = logs.next;
    await sweepCancels(this.store, this.fence);
    const keys = await sweepDedupKeys(this.store, this.fence, { from: this.dedupFrom, shards: DEDUP_SWEEP_SHARDS });
    this.dedupFrom = keys.next;
  }

  private async promoteLoop(term: number): Promise<void> {
    while (this.leading && this.term === term) {
      let wait: number;
      this.delayedChanged = false;
      try {
        const now = await this.clock.now();
        const { promoted, nextDue } = await promoteDue(this.store, this.fence, this.onDelayedChange, now);
        if (promoted.length > 0) this.emit('promoted', promoted);
        // After promoting, look again at once: the promotion's own deletes fired the watches this
        // pass set, so sleeping now would leave a job delayed meanwhile to the poll.
        wait =
          promoted.length > 0
            ? 0
            : Math.max(
                0,
                Math.min(this.promotePollMs, this.clock.toLocal(nextDue ?? Number.POSITIVE_INFINITY) - Date.now()),
              );
      } catch (err) {
        this.report(err);
        wait = PROMOTE_RETRY_MS;
      }
      // a change seen while this pass ran (its watch fired before the sleep began): look again
      if (this.delayedChanged) wait = 0;
      if (wait > 0 && this.leading && this.term === term) await this.sleep(wait);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakePromoter = done;
    });
  }

  private readonly onDelayedChange = (): void => {
    this.delayedChanged = true;
    this.wakePromoter?.();
  };
}
