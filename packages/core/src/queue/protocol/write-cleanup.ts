/**
 * What the executor cleans up after its writes: the receipts of settled
 * transactions, deleted in batches a while after them, and the event log,
 * trimmed to its last EVENTS_KEEP nodes by the writer of every
 * EVENTS_TRIM_EVERY-th node.
 */
import { randomBytes } from 'node:crypto';
import { NoNodeError } from '../../zk/errors.js';
import type { Session } from '../../zk/session.js';
import { type QueueLayout, sequenceOf } from '../layout.js';
import type { ProtocolOp, RunOptions, TxUnit, UnitResult } from './units.js';

/**
 * Receipts deleted per multi, and how long deletions wait to be batched, ms:
 * a second, so that a trickle of jobs does not send one more transaction per
 * transaction, and a busy queue sends one per RECEIPT_BATCH (the session
 * flushes what is left when it closes; the leader sweeps a dead client's).
 */
const RECEIPT_BATCH = 500;
const RECEIPT_FLUSH_MS = 1000;
/** Event log nodes: the writer of every TRIM_EVERY-th trims the log to EVENTS_KEEP. */
export const EVENTS_KEEP = 1000;
export const EVENTS_TRIM_EVERY = 100;

/** A unit that deletes one node; a node already gone is fine (the unit then fails with NoNode, unread). */
export function deleteUnit(path: string): TxUnit {
  return { build: () => ({ ops: [{ op: 'delete', path }] }) };
}

/** A new receipt's path (its name is random: only its own transaction creates it). */
export function newReceipt(layout: QueueLayout): string {
  return layout.receipt(`r-${randomBytes(8).toString('hex')}`);
}

/** Whether `op` creates a node the server numbers: sent twice, it makes two nodes (the executor then adds a receipt). */
export function isSequentialCreate(op: ProtocolOp): boolean {
  return op.op === 'create' && (op.mode === 'persistent_sequential' || op.mode === 'ephemeral_sequential');
}

type Run = (units: readonly TxUnit[], o: RunOptions<TxUnit>) => Promise<UnitResult[]>;

export class WriteCleanup {
  private readonly pendingReceipts: string[] = [];
  private receiptTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly session: Session,
    private readonly layout: QueueLayout,
    private readonly run: Run,
  ) {}

  /** A settled transaction's receipt: deleted with the next batch. */
  deleteReceipt(path: string): void {
    this.pendingReceipts.push(path);
    if (this.pendingReceipts.length >= RECEIPT_BATCH) {
      void this.flushReceipts();
      return;
    }
    if (!this.receiptTimer) {
      this.receiptTimer = setTimeout(() => void this.flushReceipts(), RECEIPT_FLUSH_MS);
      this.receiptTimer.unref();
    }
  }

  /** Deletes the receipts of settled transactions now (left ones are removed by the leader later). */
  async flushReceipts(): Promise<void> {
    clearTimeout(this.receiptTimer);
    this.receiptTimer = undefined;
    const paths = this.pendingReceipts.splice(0);
    if (paths.length === 0) return;
    await this.deleteAll(paths).catch(() => undefined);
  }

  /** Trims the event log to its last EVENTS_KEEP nodes, when the node just written is a trim point. */
  afterEvent(path: string | undefined): void {
    if (!path) return;
    const seq = sequenceOf(path);
    if (seq % EVENTS_TRIM_EVERY !== 0 || seq < EVENTS_KEEP) return;
    void this.trimEvents(seq).catch(() => undefined);
  }

  /** Deletes event nodes older than the last EVENTS_KEEP before `latest`. */
  private async trimEvents(latest: number): Promise<void> {
    const names = await this.session.getChildren(this.layout.eventLog);
    const old = names.filter((n) => sequenceOf(n) <= latest - EVENTS_KEEP);
    await this.deleteAll(old.map((n) => `${this.layout.eventLog}/${n}`));
  }

  /**
   * Deletes nodes with names of their own, without a receipt: sent again
   * after it committed, a delete fails alone (NoNode). The first that does
   * has the others read in one read-only multi, and those gone fail with it,
   * rather than a multi sent again per node deleted.
   */
  private deleteAll(paths: string[]): Promise<UnitResult[]> {
    const units = paths.map(deleteUnit);
    const pathOf = new Map(units.map((u, i) => [u, paths[i] as string]));
    const recheck = async (rest: TxUnit[]) => {
      const reads = rest.map((u) => ({ op: 'getChildren' as const, path: pathOf.get(u) as string }));
      const replies = await this.session.readMulti(reads);
      return replies.map((r) => (!r.ok && r.error instanceof NoNodeError ? r.error : undefined));
    };
    return this.run(units, { receipt: false, recheck });
  }
}
