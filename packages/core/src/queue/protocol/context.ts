/**
 * What the protocol's transitions are given of a queue: its session, layout,
 * executor and clock, the reads they plan from, and where a new pointer
 * goes. QueueStore (store.ts) is the one implementation; the protocol names
 * this type only, so no import runs from it back up to the store.
 */
import type { Session } from '../../zk/session.js';
import type { Watcher } from '../../zk/types.js';
import type { EventSink } from '../events.js';
import type { QueueLayout } from '../layout.js';
import type { JobRecord } from '../record.js';
import type { ServerClock } from '../runtime/server-clock.js';
import type { Destination, Place } from './builders.js';
import type { Containers } from './containers.js';
import type { TxExecutor } from './executor.js';

/** A job as read: its record and the version that fences a write of it. */
export interface StoredJob {
  record: JobRecord;
  /** Data version of the record (an attempt's token is its ready pointer's version, not this). */
  version: number;
}

/** What a claim node holds. */
export interface ClaimInfo {
  /** Worker id holding the job. */
  worker: string;
  /** The path of the attempt's ready pointer: its data version is the attempt's fencing token. */
  pointer?: string;
  /**
   * The attempt's fencing token, once known: a claim is created before its
   * token is (the token is the version its own transaction gives the ready
   * pointer), so only renewals and re-claims write it.
   */
  token?: number;
  /** When the attempt started, on the claiming worker's clock (BullMQ's `processedOn`). */
  at?: number;
  /** The lease: the leader revokes a claim not renewed for this long, ms. */
  lockDuration: number;
  /** Latest progress reported by the processor. */
  progress?: unknown;
  /** The global-concurrency slot held (deleted with this node). */
  slot?: string;
  /** The rate-limit window that counted the attempt. */
  window?: string;
}

export type { Place };

export interface ProtocolContext {
  readonly session: Session;
  readonly queue: string;
  readonly layout: QueueLayout;
  /** The one transaction executor every write goes through. */
  readonly executor: TxExecutor;
  /** Where pointers go: the tail bucket of each container. */
  readonly containers: Containers;
  /** The event log, written only while someone listens. */
  readonly events: EventSink;
  /** ZooKeeper's time, which due times are written in and judged on. */
  readonly clock: ServerClock;
  /** Creates the queue's directories once. */
  init(): Promise<void>;
  /** The context of queue `queue` on the same session (this one for its own name): a flow's other queues. */
  sibling(queue: string): ProtocolContext;
  /** Creates a directory node if it is not known to exist. */
  ensureDir(path: string): Promise<void>;
  /** Where a job's new pointer goes (a bucket picked by Containers). */
  destination(place: Place): Promise<Destination>;
  /** The children of `path`, or none when the node is gone. */
  children(path: string, watch?: Watcher): Promise<string[]>;
  /** The job's record and version, or undefined when there is no such job; `active` while claimed. */
  getJob(id: string): Promise<StoredJob | undefined>;
  /** The claim node of an active job, or undefined. */
  getClaim(id: string): Promise<ClaimInfo | undefined>;
  /** ZooKeeper's time now (a write to the `clock` node). */
  serverNow(): Promise<number>;
}
