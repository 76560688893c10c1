/**
 * QueueStore: the seam between Queue/Worker/Job and ZooKeeper. Nothing above
 * it builds a path or a transaction; it goes through the session layer only.
 *
 * This file holds set-up, id allocation, enqueue and reads; the state
 * transitions of a claimed job live in transitions.ts, the scan of the ready
 * head in head.ts.
 */
import { randomBytes } from 'node:crypto';
import { isOutcomeUnknown, NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import type { Op, OpResult, Watcher } from '../zk/types.js';
import { EventSink, type QueueEventRecord } from './events.js';
import { BUCKET_CAPACITY, ID_BLOCK_SIZE, QueueLayout, sequenceOf } from './layout.js';
import { decodeRecord, encodeRecord, type JobRecord } from './record.js';

/** Most entries (two nodes each) per enqueue transaction. */
export const ENQUEUE_CHUNK = 500;
/** Enqueue transactions one call keeps in flight. */
export const ENQUEUE_IN_FLIGHT = 8;
/** Most bytes of node data per enqueue transaction (ZooKeeper's packet limit is ~1 MB). */
export const ENQUEUE_CHUNK_BYTES = 700 * 1024;

/** A job to enqueue: its record (state waiting or delayed) and where its pointer goes. */
export interface EnqueueEntry {
  record: JobRecord;
  lane: string;
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
  private initialized: Promise<void> | undefined;
  private readonly tails = new Map<string, number>();
  /** Pointers this producer counts in each lane's tail bucket (sent or known). */
  private readonly fill = new Map<string, number>();
  private sendChain: Promise<unknown> = Promise.resolve();
  /** Directories known to exist, or being created (callers share one creation). */
  private readonly knownDirs = new Map<string, Promise<void>>();
  private idBlock = { next: 0, end: 0 };
  private idRefill: Promise<void> | undefined;

  constructor(
    readonly session: Session,
    readonly queue: string,
  ) {
    this.layout = new QueueLayout(queue);
    this.events = new EventSink(this);
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
    if (await this.session.exists(this.layout.meta)) return;
    await this.session.ensurePath(this.layout.root);
    const dirs = this.layout.directories().slice(1);
    await Promise.all(
      dirs.map((d) =>
        this.session.create(d).catch((err) => {
          if (!(err instanceof NodeExistsError)) throw err;
        }),
      ),
    );
    await this.session
      .create(this.layout.meta, Buffer.from(JSON.stringify({ layout: 1, paused: false })))
      .catch((err) => {
        if (!(err instanceof NodeExistsError)) throw err;
      });
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
    const stat = await this.session.setData(this.layout.ids, Buffer.alloc(0)).catch(async (err) => {
      if (!(err instanceof NoNodeError)) throw err;
      await this.session.create(this.layout.ids).catch(() => undefined);
      return this.session.setData(this.layout.ids, Buffer.alloc(0));
    });
    this.idBlock = { next: stat.version * ID_BLOCK_SIZE, end: (stat.version + 1) * ID_BLOCK_SIZE };
  }

  // ---- enqueue --------------------------------------------------------------

  /** The bucket producers append to in `lane` (cached; created when missing). */
  async tailBucket(lane: string, refresh = false): Promise<number> {
    const cached = this.tails.get(lane);
    if (cached !== undefined && !refresh) return cached;
    await this.ensureDir(this.layout.lane(lane));
    const buckets = await this.session.getChildren(this.layout.lane(lane));
    const last = buckets.length ? Math.max(...buckets.map(sequenceOf)) : 0;
    await this.ensureDir(this.layout.bucket(lane, last));
    // The next sequence number is the bucket's count of child changes so far.
    const stat = await this.session.exists(this.layout.bucket(lane, last));
    this.tails.set(lane, last);
    this.fill.set(lane, stat?.cversion ?? 0);
    return last;
  }

  private async rollBucket(lane: string, full: number): Promise<void> {
    if ((this.tails.get(lane) ?? 0) > full) return;
    await this.ensureDir(this.layout.bucket(lane, full + 1));
    // Another roll of the same bucket may have finished meanwhile (and slots
    // of the new bucket been reserved): only the first one resets the count.
    if ((this.tails.get(lane) ?? 0) > full) return;
    this.tails.set(lane, full + 1);
    this.fill.set(lane, 0);
  }

  /** Creates a directory node if it is not known to exist; concurrent callers share one creation. */
  async ensureDir(path: string): Promise<void> {
    let known = this.knownDirs.get(path);
    if (!known) {
      known = this.session.ensurePath(path);
      this.knownDirs.set(path, known);
      known.catch(() => this.knownDirs.delete(path));
    }
    await known;
  }

  /** Forgets cached directories (after a NoNode: someone removed an empty bucket or window). */
  forgetDirs(): void {
    this.knownDirs.clear();
    this.tails.clear();
    this.fill.clear();
  }

  /**
   * Enqueues entries atomically, in chunks that fit one transaction each.
   * Entries whose custom id exists already are skipped and reported in
   * `existing` (de-duplication is the record create failing atomically).
   */
  async enqueue(entries: readonly EnqueueEntry[]): Promise<{ added: string[]; existing: string[] }> {
    await this.init();
    const added: string[] = [];
    const existing: string[] = [];
    const nonce = randomBytes(6).toString('hex');
    const prepared = entries.map((e) => ({
      ...e,
      data: encodeRecord({ ...e.record, lane: e.lane, n: nonce } as JobRecord),
    }));
    // Chunks are pipelined: ZooKeeper runs one session's requests in order, so
    // they commit in the order they were sent and FIFO holds.
    const inFlight: Promise<{ added: string[]; existing: string[] }>[] = [];
    for (const chunk of chunks(prepared)) {
      const sent = this.enqueueChunk(chunk, nonce);
      sent.catch(() => undefined); // awaited below; never left unhandled
      inFlight.push(sent);
      if (inFlight.length >= ENQUEUE_IN_FLIGHT) await inFlight[inFlight.length - ENQUEUE_IN_FLIGHT];
    }
    for (const result of await Promise.all(inFlight)) {
      added.push(...result.added);
      existing.push(...result.existing);
    }
    return { added, existing };
  }

  private async enqueueChunk(chunk: Prepared[], nonce: string): Promise<{ added: string[]; existing: string[] }> {
    let pending = chunk;
    const existing: string[] = [];
    for (let attempt = 0; pending.length > 0; attempt++) {
      let ops: Op[] = [];
      try {
        const sent = await this.send(pending);
        ops = sent.ops;
        const results = await sent.written;
        this.events.afterWrite(results.map((r) => (r as { path?: string }).path));
        await this.noteFill(results, sent.lanes);
        return { added: pending.map((e) => e.record.id), existing };
      } catch (err) {
        if (
          err instanceof NodeExistsError &&
          err.opIndex !== undefined &&
          err.opIndex < ops.length &&
          err.opIndex % 2 === 0
        ) {
          const dup = pending[err.opIndex / 2] as Prepared;
          existing.push(dup.record.id);
          pending = pending.filter((e) => e !== dup);
        } else if (err instanceof NoNodeError && attempt < 3) {
          this.forgetDirs(); // a bucket or window we cached was removed
        } else if (isOutcomeUnknown(err) && attempt < 3) {
          if (await this.committed(pending[0] as Prepared, nonce)) {
            return { added: pending.map((e) => e.record.id), existing };
          }
        } else {
          throw err;
        }
      }
    }
    return { added: [], existing };
  }

  /**
   * Builds and sends one enqueue transaction, strictly after the previous one
   * was sent: transactions leave in call order (so they commit in that order:
   * FIFO), while their replies are awaited concurrently.
   */
  private send(pending: Prepared[]): Promise<{ written: Promise<OpResult[]>; ops: Op[]; lanes: (string | null)[] }> {
    const turn = this.sendChain.then(async () => {
      const { ops, lanes } = await this.enqueueOps(pending);
      const eventOp = this.events.op(pending.flatMap(enqueueEvents));
      const written = this.session.multi(eventOp ? [...ops, eventOp] : ops);
      written.catch(() => undefined); // awaited by the caller
      return { written, ops, lanes };
    });
    this.sendChain = turn.catch(() => undefined);
    return turn;
  }

  /** After an unknown outcome: did our transaction commit? (atomic: look at its first record) */
  private async committed(first: Prepared, nonce: string): Promise<boolean> {
    try {
      const { data } = await this.session.getData(this.layout.job(first.record.id));
      return (JSON.parse(data.toString()) as { n?: string }).n === nonce;
    } catch (err) {
      if (err instanceof NoNodeError) return false;
      throw err;
    }
  }

  private async enqueueOps(entries: Prepared[]): Promise<{ ops: Op[]; lanes: (string | null)[] }> {
    const ops: Op[] = [];
    const lanes: (string | null)[] = [];
    for (const { record, lane, data } of entries) {
      ops.push({ op: 'create', path: this.layout.job(record.id), data });
      if (record.state === 'delayed') {
        const due = record.due ?? Date.now();
        await this.ensureDir(this.layout.delayWindow(due));
        ops.push({ op: 'create', path: this.layout.delayed(due, record.id) });
        lanes.push(null);
      } else {
        const bucket = await this.reserveSlot(lane);
        ops.push({
          op: 'create',
          path: this.layout.readyPointerPrefix(lane, bucket, record.id),
          mode: 'persistent_sequential',
        });
        lanes.push(lane);
      }
    }
    return { ops, lanes };
  }

  /**
   * The bucket for one more pointer in `lane`: the tail, or the next one when
   * this producer's count says the tail is full, so that pipelined
   * transactions do not overfill a bucket.
   */
  private async reserveSlot(lane: string): Promise<number> {
    let bucket = await this.tailBucket(lane);
    if ((this.fill.get(lane) ?? 0) >= BUCKET_CAPACITY) {
      await this.rollBucket(lane, bucket);
      bucket = await this.tailBucket(lane);
    }
    this.fill.set(lane, (this.fill.get(lane) ?? 0) + 1);
    return bucket;
  }

  /**
   * After a write: other producers may have filled the tail too, so the
   * sequence numbers ZooKeeper gave (the bucket's count of child changes)
   * raise this producer's count; a bucket past its capacity is rolled.
   */
  private async noteFill(results: OpResult[], lanes: (string | null)[]): Promise<void> {
    for (const [i, lane] of lanes.entries()) {
      const path = (results[i * 2 + 1] as { path?: string } | undefined)?.path;
      if (!lane || !path) continue;
      const bucket = sequenceOf(path.slice(0, path.lastIndexOf('/')));
      if (bucket !== this.tails.get(lane)) continue;
      this.fill.set(lane, Math.max(this.fill.get(lane) ?? 0, sequenceOf(path) + 1));
    }
    for (const lane of new Set(lanes)) {
      if (lane && (this.fill.get(lane) ?? 0) >= BUCKET_CAPACITY) await this.rollBucket(lane, this.tails.get(lane) ?? 0);
    }
  }

  /**
   * Re-inserts a job's ready pointer (promotion from delayed, retry, stall
   * recovery), counted like an enqueue so that bulk moves roll buckets too.
   */
  async readyPointerOp(id: string, lane: string): Promise<{ op: Op; bucket: number }> {
    const bucket = await this.reserveSlot(lane);
    return {
      op: { op: 'create', path: this.layout.readyPointerPrefix(lane, bucket, id), mode: 'persistent_sequential' },
      bucket,
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
    await this.init();
    const { data } = await this.session.getData(this.layout.meta, watch ? { watch } : {});
    return (JSON.parse(data.toString()) as { paused?: boolean }).paused === true;
  }

  async setPaused(paused: boolean): Promise<void> {
    await this.init();
    await this.session.setData(this.layout.meta, Buffer.from(JSON.stringify({ layout: 1, paused })));
  }
}

/** What a claim node holds. */
export interface ClaimInfo {
  /** Worker id holding the job. */
  worker: string;
  /** The record version of this attempt (fencing token). */
  token: number;
  /** Lease end, ms since epoch; the leader revokes claims past it. */
  leaseUntil: number;
  /** Latest progress reported by the processor. */
  progress?: unknown;
}

function enqueueEvents({ record }: EnqueueEntry): QueueEventRecord[] {
  const ts = Date.now();
  const second =
    record.state === 'delayed'
      ? { event: 'delayed', jobId: record.id, delay: record.due, ts }
      : { event: 'waiting', jobId: record.id, ts };
  return [{ event: 'added', jobId: record.id, name: record.name, ts }, second];
}

/** An entry with its record serialized once. */
interface Prepared extends EnqueueEntry {
  data: Buffer;
}

function* chunks(entries: readonly Prepared[]): Generator<Prepared[]> {
  let chunk: Prepared[] = [];
  let bytes = 0;
  for (const e of entries) {
    const size = e.data.length + 256;
    if (chunk.length >= ENQUEUE_CHUNK || (chunk.length > 0 && bytes + size > ENQUEUE_CHUNK_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(e);
    bytes += size;
  }
  if (chunk.length) yield chunk;
}
