/**
 * QueueStore: the seam between Queue/Worker/Job and ZooKeeper. Nothing above
 * it builds a path or a transaction; it goes through the session layer only.
 *
 * This file holds set-up, id allocation, enqueue and reads. Every write goes
 * through the protocol module (protocol/): its builders make the ops, its
 * executor sends them.
 */
import { BadVersionError, NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import type { Watcher } from '../zk/types.js';
import { LayoutVersionError } from './errors.js';
import { EventSink, type QueueEventRecord } from './events.js';
import { ID_BLOCK_SIZE, LAYOUT_VERSION, QueueLayout } from './layout.js';
import { EnqueueBatch, type EnqueueUnit } from './protocol/add-batch.js';
import type { ClaimInfo, Place } from './protocol/attempts.js';
import { type Destination, dedupKeyOp, enqueueOps } from './protocol/builders.js';
import { Containers } from './protocol/containers.js';
import { type Built, type ProtocolOp, TxExecutor } from './protocol/executor.js';
import { decodeRecord, encodeRecord, type JobRecord } from './record.js';
import type { Turn } from './runtime/call-order.js';
import { ServerClock } from './runtime/server-clock.js';

const EMPTY = Buffer.alloc(0);

/** The first job id of a queue. */
export const FIRST_ID = 1;

/** Enqueue transactions one call keeps in flight (when no custom id can make one fail). */
export const ENQUEUE_IN_FLIGHT = 8;

/** A job to enqueue: its record (state waiting or delayed) and where its pointer goes. */
export interface EnqueueEntry {
  record: JobRecord;
  lane: string;
  /** A custom job id (the create may fail: de-duplication). */
  custom?: boolean;
  /**
   * A deduplication key to create with the job (see dedup.ts): its create
   * fails while one exists, and `met` then gives the unit that settles the
   * entry against the key, sent in its place (dedup-add.ts).
   */
  dedup?: { id: string; data: Buffer; met(): EnqueueUnit };
}

export interface StoredJob {
  record: JobRecord;
  /** Data version of the record: the fencing token. */
  version: number;
}

export class QueueStore {
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
    this.executor = new TxExecutor(session, this.layout, this.containers, this.events);
    // receipts are deleted in batches a while after their transactions: the last ones before the session ends
    session.beforeClose(() => this.executor.flushReceipts());
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

  private checkLayout(data: Buffer): void {
    let layout: unknown;
    try {
      layout = (JSON.parse(data.toString()) as { layout?: unknown }).layout;
    } catch {
      layout = undefined;
    }
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
    const first = await this.session.retry(() => this.takeIds(size));
    this.idBlockSize = size;
    this.idBlock = { next: first, end: first + size };
  }

  /** Moves the counter on by `size` (compare-and-set on its version); resolves with the first id taken. */
  private async takeIds(size: number): Promise<number> {
    const { session, layout } = this;
    for (;;) {
      const current = await session.getData(layout.ids).catch((err) => {
        if (err instanceof NoNodeError) return undefined;
        throw err;
      });
      try {
        if (!current) {
          await session.create(layout.ids, Buffer.from(String(FIRST_ID + size)));
          return FIRST_ID;
        }
        const { data, stat } = current;
        // An empty counter was written by the fixed-block allocator of earlier versions:
        // its last block ended at (version + 1) * ID_BLOCK_SIZE.
        const next = data.length > 0 ? Number(data.toString()) : (stat.version + 1) * ID_BLOCK_SIZE;
        await session.setData(layout.ids, Buffer.from(String(next + size)), stat.version);
        return next;
      } catch (err) {
        if (!(err instanceof NodeExistsError || err instanceof BadVersionError)) throw err;
      }
    }
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

  /** Forgets cached directories and tails, and the set-up (after the queue was deleted): the next use makes it again. */
  forgetDirs(): void {
    this.containers.forgetAll();
    this.initialized = undefined;
  }

  /**
   * Enqueues entries, as few transactions as fit, in order (FIFO). Entries
   * whose custom id exists already are skipped and reported in `existing`
   * (de-duplication is the record create failing atomically); an entry
   * whose deduplication key exists is settled against it by the unit its
   * `met` gives, at its place. An entry too large for any transaction fails
   * the call before anything is written. With a `turn`, the entries join the
   * group commit only once every earlier turn has (see CallOrder).
   */
  async enqueue(entries: readonly EnqueueEntry[], turn?: Turn): Promise<{ existing: string[] }> {
    await this.init();
    const units: EnqueueUnit[] = entries.map((e) => {
      const record: JobRecord = { ...e.record, lane: e.lane };
      const data = encodeRecord(record);
      const { dedup } = e;
      return {
        build: async () => {
          if (dedup) await this.ensureDir(this.layout.dedupShard(dedup.id));
          return this.enqueueBuilt(record, data, dedup && dedupKeyOp(this.layout, dedup));
        },
        onConflict: (error, op) =>
          dedup && error instanceof NodeExistsError && op.path === this.layout.dedupKey(dedup.id)
            ? dedup.met()
            : undefined,
      };
    });
    // Custom ids and keys may fail their create; a failed transaction sent again would then land
    // after later pipelined ones, so those calls send one transaction at a time (FIFO holds).
    const inFlight = entries.some((e) => e.custom || e.dedup) ? 1 : ENQUEUE_IN_FLIGHT;
    await turn?.wait();
    const sent = this.enqueueBatch.run(units, inFlight);
    turn?.pass();
    const results = await sent;
    const existing: string[] = [];
    for (const [i, r] of results.entries()) {
      const id = (entries[i] as EnqueueEntry).record.id;
      if (r.ok) continue;
      if (r.error instanceof NodeExistsError && r.op?.path === this.layout.job(id)) existing.push(id);
      else throw r.error;
    }
    return { existing };
  }

  /**
   * What adds `record` (its lane set; `data`, its encoding): the record and
   * its pointer, where its state puts it (ready in its lane, or delayed until
   * its due time), with `key` (a deduplication key's op) in the same multi.
   */
  async enqueueBuilt(record: JobRecord, data: Buffer, key?: ProtocolOp): Promise<Built> {
    const place: Place =
      record.state === 'delayed'
        ? { kind: 'delayed', due: record.due ?? Date.now() }
        : { kind: 'ready', lane: record.lane as string };
    return {
      ops: enqueueOps(this.layout, record.id, data, await this.destination(place), key),
      events: enqueueEvents(record),
      wakes: record.state !== 'delayed',
    };
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

  /** The job's record and version, or undefined when there is no such job. */
  async getJob(id: string): Promise<StoredJob | undefined> {
    const path = this.layout.job(id);
    try {
      const { data, stat } = await this.session.getData(path);
      return { record: decodeRecord(data, path), version: stat.version };
    } catch (err) {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    }
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
    await this.session.setData(this.layout.meta, metaData(paused));
  }

  /**
   * Registers a live worker: EPHEMERAL `workers/<id>` holding `info`, so
   * operators (and BullMQ's getWorkers) see it while its session lives. One
   * left by the same worker's previous session is replaced: it would vanish
   * when that session expires.
   */
  async registerWorker(id: string, info: Record<string, unknown>): Promise<void> {
    await this.init();
    const data = Buffer.from(JSON.stringify(info));
    const { session } = this;
    const path = this.layout.worker(id);
    await session.retry(async () => {
      for (;;) {
        try {
          await session.create(path, data, 'ephemeral');
          return;
        } catch (err) {
          if (!(err instanceof NodeExistsError)) throw err;
        }
        // Ours (a create whose reply was lost), or left by this worker's previous session: that
        // one goes when the old session expires, and the worker would vanish from the list with it.
        const stat = await session.exists(path);
        if (stat?.ephemeralOwner === session.sessionId) return;
        if (stat) {
          await session.delete(path, stat.version).catch((err) => {
            if (!(err instanceof NoNodeError) && !(err instanceof BadVersionError)) throw err;
          });
        }
      }
    });
  }

  /**
   * ZooKeeper's time now: the mtime of a write to the `clock` node (created
   * on first use). One clock for every process, whatever their own say.
   * On a session with `clock: 'process'` (tests), this process's `Date.now()`.
   */
  async serverNow(): Promise<number> {
    const { session, layout } = this;
    if (session.clock === 'process') return Date.now();
    try {
      return (await session.setData(layout.clock, EMPTY)).mtime;
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
    await session.create(layout.clock).catch((err) => {
      if (!(err instanceof NodeExistsError)) throw err;
    });
    return (await session.setData(layout.clock, EMPTY)).mtime;
  }

  /** Logs `events` on their own (pause, resume), when someone listens. */
  async publish(events: QueueEventRecord[]): Promise<void> {
    if (!this.events.enabled) return;
    await this.executor.run([{ build: () => ({ ops: [], events }) }], { receipt: false });
  }
}

/** The pause flag as read, and the version of `meta` it was read at. */
export interface PauseState {
  paused: boolean;
  version: number;
}

function metaData(paused: boolean): Buffer {
  return Buffer.from(JSON.stringify({ layout: LAYOUT_VERSION, paused }));
}

/** The events of a job added: `added`, then `delayed` or `waiting`. */
export function enqueueEvents(record: JobRecord): QueueEventRecord[] {
  const ts = Date.now();
  const second =
    record.state === 'delayed'
      ? { event: 'delayed', jobId: record.id, delay: record.due, ts }
      : { event: 'waiting', jobId: record.id, ts };
  return [{ event: 'added', jobId: record.id, name: record.name, ts }, second];
}

export type { ClaimInfo };
