/**
 * QueueStore: the seam between Queue/Worker/Job and ZooKeeper. Nothing above
 * it builds a path or a transaction; it goes through the session layer only.
 *
 * This file holds set-up, id allocation, enqueue and reads. Every write goes
 * through the protocol module (protocol/): its builders make the ops, its
 * executor sends them.
 */
import { NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import type { Watcher } from '../zk/types.js';
import { LayoutVersionError } from './errors.js';
import { EventSink, type QueueEventRecord } from './events.js';
import { ID_BLOCK_SIZE, LAYOUT_VERSION, QueueLayout } from './layout.js';
import type { ClaimInfo, Place } from './protocol/attempts.js';
import { type Destination, enqueueOps } from './protocol/builders.js';
import { Containers } from './protocol/containers.js';
import { TxExecutor, type TxUnit } from './protocol/executor.js';
import { decodeRecord, encodeRecord, type JobRecord } from './record.js';

/** Enqueue transactions one call keeps in flight (when no custom id can make one fail). */
export const ENQUEUE_IN_FLIGHT = 8;

/** A job to enqueue: its record (state waiting or delayed) and where its pointer goes. */
export interface EnqueueEntry {
  record: JobRecord;
  lane: string;
  /** A custom job id (the create may fail: de-duplication). */
  custom?: boolean;
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
  private initialized: Promise<void> | undefined;
  private idBlock = { next: 0, end: 0 };
  private idRefill: Promise<void> | undefined;

  constructor(
    readonly session: Session,
    readonly queue: string,
  ) {
    this.layout = new QueueLayout(queue);
    this.events = new EventSink(session, this.layout);
    this.containers = new Containers(session, this.layout);
    this.executor = new TxExecutor(session, this.layout, this.containers, this.events);
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
   * `n` fresh numeric job ids. Each block of ID_BLOCK_SIZE costs one write of
   * the `ids` counter (its new version numbers the block); concurrent callers
   * share one refill.
   */
  async nextIds(n: number): Promise<string[]> {
    const ids: string[] = [];
    while (ids.length < n) {
      if (this.idBlock.next >= this.idBlock.end) {
        this.idRefill ??= this.refillIds().finally(() => {
          this.idRefill = undefined;
        });
        await this.idRefill;
        continue;
      }
      ids.push(String(this.idBlock.next++));
    }
    return ids;
  }

  private async refillIds(): Promise<void> {
    // Retried: a write whose reply was lost costs one skipped block of ids, nothing else.
    const stat = await this.session.retry(() =>
      this.session.setData(this.layout.ids, Buffer.alloc(0)).catch(async (err) => {
        if (!(err instanceof NoNodeError)) throw err;
        await this.session.create(this.layout.ids).catch(() => undefined);
        return this.session.setData(this.layout.ids, Buffer.alloc(0));
      }),
    );
    this.idBlock = { next: stat.version * ID_BLOCK_SIZE, end: (stat.version + 1) * ID_BLOCK_SIZE };
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
      default:
        return { kind: place.kind, bucket: await containers.slot(layout.finishedDir(place.kind)) };
    }
  }

  /** Creates a directory node if it is not known to exist; concurrent callers share one creation. */
  ensureDir(path: string): Promise<void> {
    return this.containers.ensureDir(path);
  }

  /** Forgets cached directories and tails (after the queue was deleted). */
  forgetDirs(): void {
    this.containers.forgetAll();
  }

  /**
   * Enqueues entries, as few transactions as fit, in order (FIFO). Entries
   * whose custom id exists already are skipped and reported in `existing`
   * (de-duplication is the record create failing atomically). An entry too
   * large for any transaction fails the call before anything is written.
   */
  async enqueue(entries: readonly EnqueueEntry[]): Promise<{ added: string[]; existing: string[] }> {
    await this.init();
    const units: TxUnit[] = entries.map((e) => {
      const data = encodeRecord({ ...e.record, lane: e.lane });
      const { record } = e;
      const place: Place =
        record.state === 'delayed'
          ? { kind: 'delayed', due: record.due ?? Date.now() }
          : { kind: 'ready', lane: e.lane };
      return {
        build: async () => ({
          ops: enqueueOps(this.layout, record.id, data, await this.destination(place)),
          events: enqueueEvents(e),
          wakes: record.state !== 'delayed',
        }),
      };
    });
    // Custom ids may fail their create; a failed transaction sent again would then land after
    // later pipelined ones, so those calls send one transaction at a time (FIFO holds).
    const inFlight = entries.some((e) => e.custom) ? 1 : ENQUEUE_IN_FLIGHT;
    const results = await this.executor.run(units, { inFlight });
    const added: string[] = [];
    const existing: string[] = [];
    results.forEach((r, i) => {
      const id = (entries[i] as EnqueueEntry).record.id;
      if (r.ok) added.push(id);
      else if (r.error instanceof NodeExistsError && r.op?.path === this.layout.job(id)) existing.push(id);
    });
    const failed = results.find((r) => !r.ok && !(r.error instanceof NodeExistsError));
    if (failed && !failed.ok) throw failed.error;
    return { added, existing };
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
    await this.init();
    const { data } = await this.session.getData(this.layout.meta, watch ? { watch } : {});
    return (JSON.parse(data.toString()) as { paused?: boolean }).paused === true;
  }

  async setPaused(paused: boolean): Promise<void> {
    await this.init();
    await this.session.setData(this.layout.meta, metaData(paused));
  }

  /** Logs `events` on their own (pause, resume), when someone listens. */
  async publish(events: QueueEventRecord[]): Promise<void> {
    if (!this.events.enabled) return;
    await this.executor.run([{ build: () => ({ ops: [], events }) }], { receipt: false });
  }
}

function metaData(paused: boolean): Buffer {
  return Buffer.from(JSON.stringify({ layout: LAYOUT_VERSION, paused }));
}

function enqueueEvents({ record }: EnqueueEntry): QueueEventRecord[] {
  const ts = Date.now();
  const second =
    record.state === 'delayed'
      ? { event: 'delayed', jobId: record.id, delay: record.due, ts }
      : { event: 'waiting', jobId: record.id, ts };
  return [{ event: 'added', jobId: record.id, name: record.name, ts }, second];
}

export type { ClaimInfo };
