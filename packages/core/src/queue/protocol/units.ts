/**
 * What the executor is given to write: units of ops, each op with the role
 * that says what its failure means (executor.ts), and what became of each.
 */
import type { ZooKeeperError } from '../../zk/errors.js';
import type { Op, OpResult } from '../../zk/types.js';
import type { QueueEventRecord } from '../event-record.js';

/** The event log as the executor writes it (events.ts: EventSink): one node per multi, while someone listens. */
export interface EventLog {
  readonly enabled: boolean;
  op(events: QueueEventRecord[]): Op | undefined;
}

/** What an op means to the executor when it fails. */
export type OpRole =
  /** A leader's election check, a claim's pause-flag check: its failure ends the run (FencedError). */
  | 'fence'
  /** A create inside a bucketed container that readers may remove: NoNode means build again. */
  | 'into'
  /** The job's claim node: the caller decides (a finish goes on without a vanished claim). */
  | 'claim'
  /**
   * A write at a version its unit read while being built (a flow parent's
   * dependencies, shared by siblings): on conflict the unit is built again.
   */
  | 'reread'
  /**
   * Retention riding in another change (a finish trimming its finished set,
   * see trims.ts), planned from a cached view of that set: on conflict the
   * view was stale, so every unit of the multi holding such an op (all
   * planned from it) is built again.
   */
  | 'trim';

export type ProtocolOp = Op & { role?: OpRole };

/** One unit's ops and the events they publish. */
export interface Built {
  ops: ProtocolOp[];
  events?: QueueEventRecord[];
  /** The unit makes a job claimable: the multi also rewrites the wake-up node (`head`). */
  wakes?: boolean;
}

/** One owner's share of a transaction; `build` is called again when the unit must be rebuilt. */
export interface TxUnit {
  build(): Built | Promise<Built>;
  /**
   * Its last built ops will not be sent: it is built again, or replaced by
   * the unit `onConflict` offered. `op`: the op whose failure caused it (of
   * another unit when a `trim` op failed: they planned from the same view).
   */
  dropped?(op: ProtocolOp): void;
  /** Its outcome is final: its last built ops were applied (with their results, unless read back), or it failed. */
  settled?(result: UnitResult): void;
  /**
   * Its multi is about to be sent (again, after a failure): called in the
   * order multis are sent, so a unit may bind its ops to that order (the
   * version of a node several of its multis write one after the other).
   */
  sending?(): void;
  /** The multi it was sent in was certainly not applied (it failed on an op). */
  unsent?(): void;
  /**
   * Its build reads what the units before it write (a deduplication key met
   * by an add, read to be taken over at its version): it is built only once
   * every unit before it has settled, and opens a multi (later units may
   * join it).
   */
  seesEarlier?: boolean;
}

/** What became of a unit: applied (`results` unless settled by a receipt), or failed with `error`. */
export type UnitResult = { ok: true; results?: OpResult[] } | { ok: false; error: unknown; op?: ProtocolOp };

export interface RunOptions<U extends TxUnit> {
  /** Ops of role `fence` put first in every multi (built anew for each). */
  fence?: () => ProtocolOp[];
  /** A unit's op failed: a unit to try instead, or undefined to fail it with the error. */
  onConflict?: (unit: U, error: ZooKeeperError, op: ProtocolOp) => U | undefined;
  /**
   * Create a receipt in each multi so that an unknown outcome can be read
   * back (default true). false only for ops a second send leaves as the
   * first did (executor.ts); a multi creating a sequential node gets one anyway.
   */
  receipt?: boolean;
  /**
   * Send a multi whose outcome stays unknown (no receipt, or none found) again
   * as it was (default true); false fails its units at once with
   * OutcomeUnknownError (runPlanned's writes plan again from fresh reads).
   */
  resend?: boolean;
  /**
   * A multi was handed to the session with these units, its reply not yet
   * come: a request the session is given now goes out after it, on the same
   * connection unless that changes (`Session.connection`).
   */
  sent?: (units: readonly U[]) => void;
  /** Multis in flight at once, sent in order (default 1). */
  inFlight?: number;
  /** Most ops per multi (default MAX_OPS). */
  maxOps?: number;
  /**
   * On an error that stops the run, resolve anyway: units whose multi
   * committed keep their result, every other unit fails with that error
   * (default: the run rejects with it). For callers that share one run.
   */
  settleAll?: boolean;
  /**
   * After a unit failed on a conflict (and `onConflict` offered nothing),
   * the other units of its multi are asked about in one call before they
   * are sent again: an error for each that would fail too (another writer
   * went first), which then fails at once. Units written at versions read
   * alike (claims of the head that several workers race for) then cost one
   * read and one multi per conflict, not one multi per unit taken.
   */
  recheck?: (units: U[]) => Promise<(Error | undefined)[]>;
}
