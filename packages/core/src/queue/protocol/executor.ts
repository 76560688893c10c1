/**
 * The one transaction executor: every write of the queue protocol goes
 * through `run`, so the rules below hold for every caller alike.
 *
 * - **Budget.** Units (one job's share of a transaction, or one cleanup) are
 *   packed into `multi`s that stay under ZooKeeper's packet limit, whatever
 *   the sizes, the event node included. A unit too large for any transaction
 *   fails alone with PayloadTooLargeError; the others go on.
 * - **Owners.** Every op belongs to one unit. When a `multi` fails, the failing
 *   op's index names its unit; nothing was applied, so the other units are
 *   sent again and only that one is decided on: a create into a container
 *   that has been removed (role `into`) forgets the cached container and
 *   builds the unit again; anything else goes to the caller's `onConflict`,
 *   which may offer a unit to try instead (a finish without its vanished
 *   claim, an add settled against the deduplication key it met), or lets
 *   the unit fail with the error.
 * - **Re-reads.** An op of role `reread` was written at a version read while
 *   building its unit (a flow parent's dependencies); when it fails, another
 *   writer went first, and the unit is built again from a fresh read, with
 *   every later unit of the same multi that wrote the same node so (siblings
 *   of one parent sent together), each then sent in a multi of its own. An
 *   op of role `trim` (retention planned from a cached view) rebuilds every
 *   unit of its multi that trims, since they shared that view; so does a
 *   unit holding such ops that fails for good (its plan was counted in theirs).
 * - **Fences.** Ops of role `fence` (a leader's election check, a claim's
 *   check of the pause flag) come first in every `multi`; a failed fence
 *   ends the whole run with FencedError.
 * - **Unknown outcomes.** A `multi` whose reply never came (connection loss,
 *   timeout, session expiry) may or may not have been applied. With
 *   `receipt` (the default), each `multi` also creates `receipts/r-<random>`:
 *   after a write barrier, the receipt's presence says whether the `multi`
 *   committed, and the units are settled or sent again accordingly. Without,
 *   it is sent again as it was (`resend: false`: its units fail with
 *   OutcomeUnknownError): docs/operations.md says when that is safe, and why
 *   a sequential create (an event, a pointer) always gets a receipt.
 * - **Wake-ups.** A multi holding a unit that makes a job claimable also
 *   rewrites the wake-up node `head`, whose data the first idle worker
 *   watches: finishes and claims do not wake it, new work does.
 * - **Order.** `multi`s are sent in unit order; with `inFlight` > 1 several
 *   are in flight at once (ZooKeeper applies one session's requests in
 *   order). After a failure nothing new is sent until the in-flight ones
 *   have settled, and units to send again go first. A unit that reads what
 *   the units before it write (`seesEarlier`) is built once they have all
 *   settled, and opens a multi. A multi that would write nothing (its units
 *   have no ops and no events, there is no fence) is not sent.
 * - **Optimistic writes.** `runPlanned` reads, plans one unit at the versions
 *   read and writes it, planning again when another writer went first: the
 *   one retry policy (replan.ts) every read → plan → write loop goes through.
 *
 * Units and op roles: units.ts; errors: write-errors.ts; receipts, event trims: write-cleanup.ts.
 */
import { isOutcomeUnknown, NoNodeError, SessionExpiredError, ZooKeeperError } from '../../zk/errors.js';
import { MULTI_BYTE_LIMIT, MULTI_OVERHEAD_BYTES, opBytes, type Session } from '../../zk/session.js';
import type { OpResult } from '../../zk/types.js';
import { PayloadTooLargeError } from '../errors.js';
import type { QueueEventRecord } from '../event-record.js';
import type { QueueLayout } from '../layout.js';
import type { Containers } from './containers.js';
import { type BatchPlan, type Plan, type PlannedOptions, runPlannedBatch } from './replan.js';
import type { Built, EventLog, ProtocolOp, RunOptions, TxUnit, UnitResult } from './units.js';
import { isSequentialCreate, newReceipt, WriteCleanup } from './write-cleanup.js';
import { FencedError, OutcomeUnknownError } from './write-errors.js';

export * from './replan.js';
export type * from './units.js';
export { deleteUnit, EVENTS_KEEP, EVENTS_TRIM_EVERY } from './write-cleanup.js';
export * from './write-errors.js';

const EMPTY = Buffer.alloc(0);

/** Most ops per multi: ZooKeeper's cost is per request, but a huge one delays every other client. */
export const MAX_OPS = 1000;
/** Most bytes of a multi's ops, leaving room for the receipt and a margin. */
export const TX_BYTE_BUDGET = MULTI_BYTE_LIMIT - MULTI_OVERHEAD_BYTES - 1024;
/** Times a unit is built again after its container vanished, or sent again after an unknown outcome. */
const MAX_RETRIES = 8;
/**
 * Times a unit is built again after a `reread` op met a newer version: each
 * conflict means another unit went through, so a sibling among many waits
 * its turn at most once per sibling.
 */
const MAX_REREADS = 1000;

interface Entry<U extends TxUnit> {
  unit: U;
  index: number;
  built?: Built;
  bytes: number;
  retries: number;
  rereads?: number;
  /**
   * Built again after a `reread` conflict: sent in a multi of its own, after
   * the units before it (one of which may be the sibling it conflicted with
   * inside the same multi, not applied yet when it failed).
   */
  solo?: boolean;
}

interface Batch<U extends TxUnit> {
  entries: Entry<U>[];
  /** Index in the multi of each entry's first op. */
  starts: number[];
  ops: ProtocolOp[];
  fenceOps: number;
  eventIndex: number;
  /** Index of the wake-up node's rewrite, -1 without one. */
  wakeIndex: number;
  /** Index of the receipt's create, -1 without one. */
  receiptIndex: number;
  receipt?: string;
}

export class TxExecutor {
  /** Receipts deleted and the event log trimmed after the writes (write-cleanup.ts). */
  private readonly cleanup: WriteCleanup;

  /**
   * The executor of a queue's store: receipts are deleted in batches a while
   * after their transactions, so the last ones go before the session ends.
   */
  static open(session: Session, layout: QueueLayout, containers: Containers, events: EventLog): TxExecutor {
    const executor = new TxExecutor(session, layout, containers, events);
    session.beforeClose(() => executor.flushReceipts());
    return executor;
  }

  constructor(
    private readonly session: Session,
    private readonly layout: QueueLayout,
    private readonly containers: Containers,
    private readonly events: EventLog,
  ) {
    this.cleanup = new WriteCleanup(session, layout, (units, o) => this.run(units, o));
  }

  /** Runs an optimistic write by the one retry policy (replan.ts). */
  runPlanned<T>(plan: (attempt: number) => Promise<Plan<T>>, o: PlannedOptions<T> = {}): Promise<T> {
    return this.runPlannedBatch([0], async (_, attempt) => [await plan(attempt)], o).then(([answer]) => answer as T);
  }

  /** Runs optimistic writes of a batch together by the same policy (replan.ts `runPlannedBatch`). */
  runPlannedBatch<I, T>(items: readonly I[], plan: BatchPlan<I, T>, o: PlannedOptions<T> = {}): Promise<T[]> {
    return runPlannedBatch((units, options) => this.run(units, options), items, plan, o);
  }

  /** Writes `units`; resolves with one result per unit, in order. */
  async run<U extends TxUnit>(units: readonly U[], o: RunOptions<U> = {}): Promise<UnitResult[]> {
    const results: UnitResult[] = new Array(units.length);
    let queue: Entry<U>[] = units.map((unit, index) => ({ unit, index, bytes: 0, retries: 0 }));
    const inFlight = Math.max(1, o.inFlight ?? 1);
    const running = new Set<Promise<void>>();
    let again: Entry<U>[] = [];
    let fatal: unknown;
    // Set the moment a multi fails (before its outcome is even known): nothing new is
    // sent until every multi in flight has settled and the units to send again are in front.
    let halted = false;
    const halt = () => {
      halted = true;
    };
    while ((queue.length > 0 || running.size > 0) && fatal === undefined) {
      const next = queue[0];
      const waits = next !== undefined && next.unit.seesEarlier === true && !next.built && running.size > 0;
      if (queue.length > 0 && running.size < inFlight && !halted && !waits) {
        const batch = await this.nextBatch(queue, results, o, running.size > 0);
        queue = queue.slice(batch.taken);
        if (!batch.batch) continue;
        if (halted || fatal !== undefined) {
          // a multi failed while this one was built: what is sent again goes first
          queue = [...batch.batch.entries, ...queue];
          continue;
        }
        if (batch.batch.ops.length === (batch.batch.receiptIndex >= 0 ? 1 : 0)) {
          // no op, no event, no fence: nothing to write, nothing to send
          for (const e of batch.batch.entries) this.decide(results, e, { ok: true, results: [] });
          continue;
        }
        const sent = this.send(batch.batch, o, results, halt).then(
          (redo) => {
            again.push(...redo.filter((e) => results[e.index] === undefined));
          },
          (err) => {
            fatal ??= err;
          },
        );
        const tracked = sent.finally(() => running.delete(tracked));
        running.add(tracked);
        continue;
      }
      if (running.size > 0) await Promise.race(running);
      if (running.size === 0) {
        queue = [...again.sort((a, b) => a.index - b.index), ...queue];
        again = [];
        halted = false;
      }
    }
    await Promise.allSettled(running);
    if (fatal !== undefined) {
      if (!o.settleAll) throw fatal;
      for (let i = 0; i < units.length; i++) results[i] ??= { ok: false, error: fatal };
    }
    return results;
  }

  /**
   * Builds and packs the next units into one multi; units too large for any
   * fail at once. `busy`: multis are in flight, so a `seesEarlier` unit is
   * not built even when the units before it here all failed unsent.
   */
  private async nextBatch<U extends TxUnit>(
    queue: Entry<U>[],
    results: UnitResult[],
    o: RunOptions<U>,
    busy: boolean,
  ): Promise<{ batch?: Batch<U>; taken: number }> {
    const fence = o.fence?.() ?? [];
    let receipt = o.receipt === false ? undefined : newReceipt(this.layout);
    let bytes =
      fence.reduce((n, op) => n + opBytes(op, this.session.namespace), 0) +
      (receipt ? opBytes({ op: 'create', path: receipt }, this.session.namespace) : 0);
    const maxOps = o.maxOps ?? MAX_OPS;
    const entries: Entry<U>[] = [];
    let opCount = fence.length;
    let taken = 0;
    for (const entry of queue) {
      if (entry.solo && entries.length > 0) break;
      // built after the multis before it settle (run): the next multi starts with it
      if (entry.unit.seesEarlier && !entry.built && (entries.length > 0 || busy)) break;
      if (!entry.built) {
        try {
          entry.built = await entry.unit.build();
        } catch (error) {
          this.decide(results, entry, { ok: false, error });
          taken++;
          continue;
        }
        entry.bytes =
          entry.built.ops.reduce((n, op) => n + opBytes(op, this.session.namespace), 0) +
          this.eventBytes(entry.built.events);
      }
      if (entry.bytes + bytes > TX_BYTE_BUDGET || opCount + entry.built.ops.length > maxOps) {
        if (entries.length > 0) break;
        if (entry.bytes + bytes > TX_BYTE_BUDGET) {
          this.decide(results, entry, {
            ok: false,
            error: new PayloadTooLargeError(entry.bytes, TX_BYTE_BUDGET, 'transaction'),
          });
          taken++;
          continue;
        }
      }
      entries.push(entry);
      bytes += entry.bytes;
      opCount += entry.built.ops.length;
      taken++;
      if (entry.solo) break;
    }
    if (entries.length === 0) return { taken };
    const ops: ProtocolOp[] = [...fence];
    const starts: number[] = [];
    for (const e of entries) {
      starts.push(ops.length);
      ops.push(...(e.built as Built).ops);
    }
    const eventOp = this.events.op(entries.flatMap((e) => e.built?.events ?? []));
    const eventIndex = eventOp ? ops.push(eventOp) - 1 : -1;
    receipt ??= ops.some(isSequentialCreate) ? newReceipt(this.layout) : undefined;
    const wakeIndex = entries.some((e) => e.built?.wakes)
      ? ops.push({ op: 'setData', path: this.layout.head, data: EMPTY }) - 1
      : -1;
    const receiptIndex = receipt ? ops.push({ op: 'create', path: receipt }) - 1 : -1;
    return {
      batch: { entries, starts, ops, fenceOps: fence.length, eventIndex, wakeIndex, receiptIndex, receipt },
      taken,
    };
  }

  /** Records a unit's final outcome and tells the unit. */
  private decide<U extends TxUnit>(results: UnitResult[], entry: Entry<U>, result: UnitResult): void {
    results[entry.index] = result;
    entry.unit.settled?.(result);
  }

  private eventBytes(events: QueueEventRecord[] | undefined): number {
    if (!events?.length || !this.events.enabled) return 0;
    return Buffer.byteLength(JSON.stringify(events)) + 8;
  }

  /**
   * Sends one multi and settles its units; resolves with the entries to send
   * again (in no particular order).
   */
  private async send<U extends TxUnit>(
    batch: Batch<U>,
    o: RunOptions<U>,
    results: UnitResult[],
    halt: () => void,
  ): Promise<Entry<U>[]> {
    for (const e of batch.entries) e.unit.sending?.();
    const reply = this.session.multi(batch.ops);
    o.sent?.(batch.entries.map((e) => e.unit));
    const written = await reply.catch((failure: unknown) => ({ failure }));
    if ('failure' in written) {
      halt();
      if (!isOutcomeUnknown(written.failure) && !(written.failure instanceof SessionExpiredError)) {
        for (const e of batch.entries) e.unit.unsent?.();
      }
      return this.failed(batch, written.failure, o, results);
    }
    this.settle(batch, written, results);
    return [];
  }

  private settle<U extends TxUnit>(batch: Batch<U>, written: OpResult[] | undefined, results: UnitResult[]): void {
    batch.entries.forEach((e, i) => {
      const start = batch.starts[i] as number;
      const mine = written?.slice(start, start + (e.built as Built).ops.length);
      this.decide(results, e, mine ? { ok: true, results: mine } : { ok: true });
    });
    if (batch.receipt) this.cleanup.deleteReceipt(batch.receipt);
    if (written) this.noteSequential(batch.ops, written);
    if (written && batch.eventIndex >= 0)
      this.cleanup.afterEvent((written[batch.eventIndex] as { path?: string }).path);
  }

  private async failed<U extends TxUnit>(
    batch: Batch<U>,
    err: unknown,
    o: RunOptions<U>,
    results: UnitResult[],
  ): Promise<Entry<U>[]> {
    if (isOutcomeUnknown(err) || err instanceof SessionExpiredError) return this.unknown(batch, err, o, results);
    const index = err instanceof ZooKeeperError ? err.opIndex : undefined;
    if (index === undefined) throw err;
    if (index < batch.fenceOps) throw new FencedError(err);
    if (index === batch.eventIndex || index === batch.receiptIndex || index === batch.wakeIndex) {
      // the event log, the head or the receipts directory is missing (a queue being obliterated; gone: NoNodeError)
      if (!(err instanceof NoNodeError)) throw err;
      const missing =
        index === batch.eventIndex
          ? this.layout.eventLog
          : index === batch.wakeIndex
            ? this.layout.head
            : this.layout.receiptsDir;
      await this.containers.ensureDir(missing);
      return this.retryAll(batch, err, results, false);
    }
    let owner = 0;
    while (owner + 1 < batch.starts.length && (batch.starts[owner + 1] as number) <= index) owner++;
    const entry = batch.entries[owner] as Entry<U>;
    const op = batch.ops[index] as ProtocolOp;
    const rest = batch.entries.filter((e) => e !== entry);
    if (op.role === 'into' && err instanceof NoNodeError && entry.retries < MAX_RETRIES) {
      this.containers.forget(op.path.slice(0, op.path.lastIndexOf('/')));
      drop(entry, op);
      entry.retries++;
      return [...rest, entry];
    }
    if (op.role === 'trim' && (entry.rereads ?? 0) < MAX_REREADS) {
      // nothing was applied: the units that trimmed from the same view are planned again
      const trimming = batch.entries.filter((e) => e.built?.ops.some((o) => o.role === 'trim'));
      for (const e of trimming) {
        drop(e, op);
        e.rereads = (e.rereads ?? 0) + 1;
      }
      return [...batch.entries.filter((e) => !trimming.includes(e)), ...trimming];
    }
    if (op.role === 'reread' && (entry.rereads ?? 0) < MAX_REREADS) {
      // the units after it that wrote the same node at a version read alike are stale too:
      // each is built again now, not one per multi sent again (siblings: O(k) multis, not O(k²) ops)
      const stale = batch.entries
        .slice(owner)
        .filter((e) => e === entry || (e.built?.ops.some((o) => o.role === 'reread' && o.path === op.path) ?? false))
        .filter((e) => (e.rereads ?? 0) < MAX_REREADS);
      for (const e of stale) {
        drop(e, op);
        e.rereads = (e.rereads ?? 0) + 1;
        e.solo = true;
      }
      return [...rest.filter((e) => !stale.includes(e)), ...stale];
    }
    const instead = o.onConflict?.(entry.unit, err as ZooKeeperError, op);
    if (instead) {
      drop(entry, op);
      return [...rest, { unit: instead, index: entry.index, bytes: 0, retries: entry.retries + 1 }];
    }
    this.decide(results, entry, { ok: false, error: err, op });
    if (entry.built?.ops.some((x) => x.role === 'trim')) {
      // its retention was counted in the plans made after it from the same view: planned again
      for (const e of rest) if (e.built?.ops.some((x) => x.role === 'trim')) drop(e, op);
    }
    if (!o.recheck || rest.length === 0) return rest;
    const stale = await o.recheck(rest.map((e) => e.unit)).catch(() => []);
    return rest.filter((e, i) => {
      const error = stale[i];
      if (error) this.decide(results, e, { ok: false, error });
      return !error;
    });
  }

  /** The multi may or may not have been applied: read its receipt back, or send it again when that is safe. */
  private async unknown<U extends TxUnit>(batch: Batch<U>, err: unknown, o: RunOptions<U>, results: UnitResult[]) {
    if (batch.receipt) {
      const receipt = batch.receipt;
      const committed = await this.session.retry(async () => {
        // A write barrier: whatever was applied before it is visible to the read after it.
        await this.session.sync(this.layout.receiptsDir);
        return (await this.session.exists(receipt)) !== null;
      });
      if (committed) {
        this.settle(batch, undefined, results);
        return [];
      }
    }
    if (o.resend === false) for (const e of batch.entries) e.retries = MAX_RETRIES; // failed now, not sent again
    return this.retryAll(batch, err, results);
  }

  private retryAll<U extends TxUnit>(batch: Batch<U>, err: unknown, results: UnitResult[], unknown = true): Entry<U>[] {
    const again: Entry<U>[] = [];
    for (const e of batch.entries) {
      if (++e.retries > MAX_RETRIES)
        this.decide(results, e, { ok: false, error: unknown ? new OutcomeUnknownError(err) : err });
      else again.push(e);
    }
    return again;
  }

  /** Sequential pointers tell Containers how full their bucket is (other writers' pointers included). */
  private noteSequential(ops: readonly ProtocolOp[], written: readonly OpResult[]): void {
    ops.forEach((op, i) => {
      if (op.role !== 'into' || op.op !== 'create' || op.mode !== 'persistent_sequential') return;
      const path = (written[i] as { path?: string } | undefined)?.path;
      if (!path) return;
      const bucket = path.slice(0, path.lastIndexOf('/'));
      this.containers.noteCreated(bucket.slice(0, bucket.lastIndexOf('/')), path);
    });
  }

  /** Deletes the receipts of settled transactions now (left ones are removed by the leader later). */
  flushReceipts(): Promise<void> {
    return this.cleanup.flushReceipts();
  }
}

/** Forgets an entry's built ops (it is built again, or replaced), telling its unit. */
function drop<U extends TxUnit>(entry: Entry<U>, op: ProtocolOp): void {
  entry.built = undefined;
  entry.unit.dropped?.(op);
}
