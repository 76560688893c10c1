/**
 * QueueStore: the seam between Queue/Worker/Job and ZooKeeper, and the one
 * implementation of the protocol's context (protocol/context.ts). Nothing
 * above it builds a path or a transaction; it goes through the session layer
 * only.
 *
 * This file holds set-up, id allocation and reads. Every write of a job's
 * state goes through the protocol module (protocol/): a transition builds
 * the ops, the executor sends them; so do the `ids` counter
 * (protocol/ids.ts) and a worker's registration
 * (protocol/worker-registration.ts). One write stays here, outside the
 * executor: the set-up (the queue's directories and `meta`, made once,
 * each create tolerating one made meanwhile). Only adds set a queue up: a
 * first add, and an add that finds the queue obliterated by another client
 * (setUpAgain), as BullMQ on Redis makes a queue's keys again on the next
 * add. Other writes into a queue that is gone fail with NoNodeError.
 */
import { NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import type { Watcher } from '../zk/types.js';
import { LayoutVersionError } from './errors.js';
import { EventSink, type QueueEventRecord } from './events.js';
import { ID_BLOCK_SIZE, LAYOUT_VERSION, QueueLayout } from './layout.js';
import {
  addedBuilt,
  addJobs,
  ENQUEUE_IN_FLIGHT,
  type EnqueueEntry,
  type EnqueueOutcome,
  enqueueEvents,
} from './protocol/add.js';
import { EnqueueBatch } from './protocol/add-batch.js';
import { claimedView } from './protocol/attempt-counts.js';
import type { Destination } from './protocol/builders.js';
import { Containers } from './protocol/containers.js';
import type { ClaimInfo, Place, ProtocolContext, StoredJob } from './protocol/context.js';
import { type Built, type ProtocolOp, TxExecutor } from './protocol/executor.js';
import { takeIds } from './protocol/ids.js';
import { readStored } from './protocol/job-reads.js';
import { metaData, readMeta, writePaused } from './protocol/pause.js';
import { publishEvents } from './protocol/publish.js';
import { serverTime } from './protocol/server-time.js';
import { registerWorker } from './protocol/worker-registration.js';
import type { JobRecord } from './record.js';
import type { Turn } from './runtime/call-order.js';
import { ServerClock } from './runtime/server-clock.js';

export class QueueStore implements ProtocolContext {
  readonly layout: QueueLayout;
  /** Queue events, written only while a QueueEvents listens. */
  readonly events: EventSink;
  /** Where pointers go: the tail bucket of each container. */
  readonly containers: Containers;
  /** The one transaction executor every write goes through. */
  readonly executor: TxExecutor;
  /** Enqueues of one turn of the event loop share the executor's transactions. */
  private readonly enqueueBatch: EnqueueBatch;
  /** ZooKeeper's time, which due times are written in and judged on. */
  readonly clock: ServerClock;
  private initialized: Promise<void> | undefined;
  private idBlock = { next: 0, end: 0 };
  /** Size of the last id block taken (the next one is at least twice as large, up to ID_BLOCK_SIZE). */
  private idBlockSize = 0;
  /** Ids wanted by the callers waiting for a refill. */
  private idDemand = 0;
  private idRefill: Promise<void> | undefined;
  /** Times the queue was forgotten (forgetDirs): a block taken before the last time is the old counter's. */
  private forgotten = 0;
  /** The end of the furthest block of ids taken, kept across forgetDirs: blocks of a queue made again start past it. */
  private idsTaken = 0;
  /** The stores of the other queues this one's flows reach, sharing its session and containers. */
  private readonly family: Map<string, QueueStore>;

  constructor(
    readonly session: Session,
    readonly queue: string,
    shared?: { family: Map<string, QueueStore>; containers: Containers },
  ) {
    this.layout = new QueueLayout(queue);
    this.events = new EventSink(session, this.layout);
    // one Containers per session: a transaction spanning queues forgets a removed bucket of any of them
    this.containers = shared?.containers ?? new Containers(session, this.layout);
    this.executor = TxExecutor.open(session, this.layout, this.containers, this.events);
    this.enqueueBatch = new EnqueueBatch(this.executor);
    this.clock = new ServerClock(this);
    this.family = shared?.family ?? new Map([[queue, this]]);
  }

  /** The store of queue `queue` on this session (this one for its own name): a flow's other queues. */
  sibling(queue: string): QueueStore {
    let store = this.family.get(queue);
    if (!store) {
      store = new QueueStore(this.session, queue, { family: this.family, containers: this.containers });
      this.family.set(queue, store);
    }
    return store;
  }

  /** Creates the queue's directories once (idempotent; `meta` is written last as the marker). */
  init(): Promise<void> {
    this.initialized ??= this.createDirectories()
      .then(() => this.events.start())
      .catch((err) => {
        this.initialized = undefined;
        throw err;
      });
    return this.initialized;
  }

  private async createDirectories(): Promise<void> {
    const meta = await this.session.getData(this.layout.meta).catch((err) => {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    });
    if (meta) return this.checkLayout(meta.data);
    await this.session.ensurePath(this.layout.root);
    const dirs = this.layout.directories().slice(1);
    await Promise.all(
      dirs.map((d) =>
        this.session.create(d).catch((err) => {
          if (!(err instanceof NodeExistsError)) throw err;
        }),
      ),
    );
    await this.session.create(this.layout.meta, metaData(false)).catch((err) => {
      if (!(err instanceof NodeExistsError)) throw err;
    });
  }

  /**
   * Opens an existing queue for reading only, creating nothing: resolves
   * false when the queue does not exist (no `meta`). Once attached, `init()`
   * creates nothing either (and this store writes no events).
   */
  async attach(): Promise<boolean> {
    const meta = await this.session.getData(this.layout.meta).catch((err) => {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    });
    if (!meta) return false;
    this.checkLayout(meta.data);
    this.initialized = Promise.resolve();
    return true;
  }

  /** Refuses a queue of another layout (`zkq migrate` reads `meta` itself: protocol/migrate.ts). */
  private checkLayout(data: Buffer): void {
    const { layout } = readMeta(data);
    if (layout !== LAYOUT_VERSION) throw new LayoutVersionError(this.queue, layout);
  }

  /**
   * `n` fresh numeric job ids, from blocks taken off the `ids` counter (its
   * data: the next free id). Blocks are sized to demand: what the callers
   * waiting for a refill need, and at least twice the previous block, up to
   * ID_BLOCK_SIZE. So a process that adds a few jobs takes a few ids (ids run
   * 1, 2, 3 across `zkq add` calls), a busy one refills rarely; ids a process
   * never used are skipped, never reused. Concurrent callers share one refill.
   */
  async nextIds(n: number): Promise<string[]> {
    const ids: string[] = [];
    while (ids.length < n) {
      if (this.idBlock.next < this.idBlock.end) {
        ids.push(String(this.idBlock.next++));
        continue;
      }
      const want = n - ids.length;
      this.idDemand += want;
      try {
        this.idRefill ??= this.refillIds().finally(() => {
          this.idRefill = undefined;
        });
        await this.idRefill;
      } finally {
        this.idDemand -= want;
      }
    }
    return ids;
  }

  private async refillIds(): Promise<void> {
    await this.init(); // the counter lives in the queue (made again after an obliterate)
    await new Promise((resolve) => setImmediate(resolve)); // callers of this turn share the refill
    const size = Math.max(this.idDemand, Math.min(ID_BLOCK_SIZE, this.idBlockSize * 2), 1);
    // Retried: a write whose reply was lost costs one skipped block of ids, nothing else.
    let forgotten = this.forgotten;
    let first: number;
    try {
      first = await this.session.retry(() => takeIds(this, size, this.idsTaken));
    } catch (err) {
      // the queue was obliterated by another client: ids are taken for an add, which sets it up again
      if (!(err instanceof NoNodeError)) throw err;
      await this.setUpAgain(forgotten);
      forgotten = this.forgotten;
      first = await this.session.retry(() => takeIds(this, size, this.idsTaken));
    }
    this.idsTaken = Math.max(this.idsTaken, first + size);
    if (this.forgotten !== forgotten) return; // the old queue's counter: nextIds refills from the new one
    this.idBlockSize = size;
    this.idBlock = { next: first, end: first + size };
  }

  // ---- enqueue and places ---------------------------------------------------

  /** Where a job's new pointer goes (a bucket picked by Containers). */
  async destination(place: Place): Promise<Destination> {
    const { layout, containers } = this;
    switch (place.kind) {
      case 'ready':
        return { kind: 'ready', bucket: await containers.slot(layout.lane(place.lane)) };
      case 'delayed':
        return { kind: 'delayed', due: place.due, bucket: await containers.slot(layout.delayHour(place.due)) };
      case 'waiting-children':
        return {
          kind: 'waiting-children',
          bucket: await containers.slot(layout.childrenDir),
          stamp: Math.floor(Date.now() / 1000),
        };
      default:
        return { kind: place.kind, bucket: await containers.slot(layout.finishedDir(place.kind)) };
    }
  }

  /** Creates a directory node if it is not known to exist; concurrent callers share one creation. */
  ensureDir(path: string): Promise<void> {
    return this.containers.ensureDir(path);
  }

  /**
   * Forgets cached directories and tails, the set-up and the ids left of the
   * last block (after the queue was deleted): the next use makes it again, and
   * takes ids off its new counter (the old block's, or one being taken
   * meanwhile, would be handed out again).
   */
  forgetDirs(): void {
    this.containers.forgetAll();
    this.initialized = undefined;
    this.idBlock = { next: 0, end: 0 };
    this.idBlockSize = 0;
    this.forgotten++;
  }

  /**
   * Sets the queue up again, as a first add does, after an add met it gone
   * (obliterated by another client) or met a numbered id stored already (a
   * block of a queue obliterated since): forgets what is cached of it
   * (forgetDirs: its set-up, directories, the ids left of the block) unless
   * that was done since `generation` (`forgotten` when the add began: by a
   * concurrent add, or this store's own obliterate), then makes it.
   */
  private async setUpAgain(generation: number): Promise<void> {
    if (this.forgotten === generation) this.forgetDirs();
    await this.init();
  }

  /**
   * Enqueues entries, as few transactions as fit, in order (FIFO): see
   * protocol/add.ts. Entries listed in `again` were not added: the queue
   * was gone, or their numbered ids stored already; it is set up again
   * before this resolves, and the caller plans them again (numbered ones
   * with new ids: see dedup-add.ts).
   */
  async enqueue(entries: readonly EnqueueEntry[], turn?: Turn): Promise<EnqueueOutcome> {
    await this.init();
    const generation = this.forgotten;
    const outcome = await addJobs(this, this.enqueueBatch, entries, turn);
    if (outcome.again.length > 0) await this.setUpAgain(generation);
    return outcome;
  }

  /** What adds `record` (its lane set; `data`, its encoding), with `key` in the same multi (protocol/add.ts). */
  enqueueBuilt(record: JobRecord, data: Buffer, key?: ProtocolOp): Promise<Built> {
    return addedBuilt(this, record, data, key);
  }

  // ---- reads ----------------------------------------------------------------

  /** The children of `path`, or none when the node is gone (a removed bucket or window). */
  async children(path: string, watch?: Watcher): Promise<string[]> {
    try {
      return await this.session.getChildren(path, watch ? { watch } : {});
    } catch (err) {
      if (err instanceof NoNodeError) return [];
      throw err;
    }
  }

  /**
   * The job's record and version, or undefined when there is no such job.
   * A waiting job whose claim node is there (read with it, in one
   * read-only multi) reads `active`, with the claim's start and worker and
   * its attempt counted (not the attempts that died before it: see
   * `claimedView`).
   */
  async getJob(id: string): Promise<StoredJob | undefined> {
    const read = await readStored(this, id);
    if (!read?.claim || read.stored.record.state !== 'waiting') return read?.stored;
    // a claim writes no record: a waiting job is active while its claim node is there, since the claim's time
    return { record: claimedView(read.stored.record, read.claim), version: read.stored.version };
  }

  /** The claim node of an active job (owner, lease, progress), or undefined. */
  async getClaim(id: string): Promise<ClaimInfo | undefined> {
    try {
      const { data } = await this.session.getData(this.layout.claim(id));
      return JSON.parse(data.toString()) as ClaimInfo;
    } catch (err) {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    }
  }

  /** Whether the queue is paused (meta flag). */
  async isPaused(watch?: () => void): Promise<boolean> {
    return (await this.pauseState(watch)).paused;
  }

  /**
   * The pause flag with the version of `meta` it was read at: a claim made
   * while it reads unset checks that version (ClaimOptions.pauseVersion).
   */
  async pauseState(watch?: () => void): Promise<PauseState> {
    await this.init();
    const { data, stat } = await this.session.getData(this.layout.meta, watch ? { watch } : {});
    return { paused: (JSON.parse(data.toString()) as { paused?: boolean }).paused === true, version: stat.version };
  }

  async setPaused(paused: boolean): Promise<void> {
    await this.init();
    await writePaused(this, paused);
  }

  /** Registers a live worker: EPHEMERAL `workers/<id>` holding `info` (protocol/worker-registration.ts). */
  async registerWorker(id: string, info: Record<string, unknown>): Promise<void> {
    await this.init();
    await this.session.retry(() => registerWorker(this, id, info));
  }

  /** ZooKeeper's time now: the mtime of a write to the `clock` node (protocol/server-time.ts). */
  serverNow(): Promise<number> {
    return serverTime(this);
  }

  /** Logs `events` on their own (pause, resume), when someone listens. */
  publish(events: QueueEventRecord[]): Promise<void> {
    return publishEvents(this, events);
  }
}

/** The pause flag as read, and the version of `meta` it was read at. */
export interface PauseState {
  paused: boolean;
  version: number;
}

export type { ClaimInfo, EnqueueEntry, StoredJob };
export { ENQUEUE_IN_FLIGHT, enqueueEvents };
