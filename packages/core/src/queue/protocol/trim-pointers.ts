/**
 * The pointers of a finished set one store picks its trims from (see
 * trim-view.ts): the oldest, from one listing of one bucket at a time, and
 * which a plan in flight deletes. A trim always takes the oldest pointers,
 * also while other stores trim side by side: stores that pick the same one
 * collide, and the one that fails is planned again from a view read anew.
 * Taking a store's own pointers first would spare those collisions, but an
 * own pointer may be newer than another store's, and the count bound keeps
 * the newest jobs of the queue.
 */
import { NoNodeError } from '../../zk/errors.js';
import { sequenceOf } from '../../zk/sequence.js';
import { idOfPointer } from '../layout.js';
import { decodeRecord, type JobRecord } from '../record.js';
import type { ProtocolContext } from './context.js';
import { mayBePendingChild } from './flow-detach.js';

export type SetKind = 'completed' | 'failed';

/** Failed records read at once to learn which victims are pending children. */
const RECORD_READ = 50;
/** Own pointers of pending children remembered at most (the oldest are forgotten first). */
const CHILDREN_LIMIT = 100_000;
/** A finished pointer's name: `c-` or `f-`, the job id, a 10-digit sequence number. */
const SEQUENTIAL = /^[cf]-.+-\d{10}$/;

/** One pointer of the set. */
export interface Entry {
  id: string;
  pointer: string;
  bucket: number;
  seq: number;
  /** Failed sets: the record read, gone, or naming a parent it may still be pending for. */
  read?: 'plain' | 'gone' | JobRecord;
  /** Its record was found gone (a trim deletes the pointer alone). */
  orphan?: boolean;
}

/** One finish batch (one executor run of finishes); older batches plan first. */
export class TrimBatch {
  private static next = 0;
  readonly seq = TrimBatch.next++;
}

export class SetPointers {
  /** Pointers a plan not settled yet deletes, and its batch. */
  readonly reserved = new Map<string, TrimBatch>();
  /** Bucket numbers as read, oldest first, and the index of the one listed into `entries`. */
  private buckets: number[] = [];
  private listed = -1;
  private entries: Entry[] = [];
  private head = 0;
  /** Pointers this store's finishes created for jobs pending for a parent, not trimmed yet: their records. */
  private readonly children = new Map<string, JobRecord>();
  /** Pointers trimmed while a read was under way (its listing may still show them). */
  private trimmedSince: Set<string> | undefined;

  constructor(
    private readonly store: ProtocolContext,
    private readonly kind: SetKind,
    private readonly dir: string,
  ) {}

  /** A read of the set starts: pointers trimmed from now on are left out of its listing. */
  reading(): void {
    this.trimmedSince = new Set();
  }

  /** The read is over: its buckets (oldest first), and the listing of the first one when it came along. */
  read(buckets: number[], first?: { bucket: number; names: string[] }): void {
    this.buckets = buckets;
    this.listed = -1;
    this.entries = [];
    this.head = 0;
    if (first && buckets[0] === first.bucket) {
      this.fill(first.bucket, first.names);
      this.listed = 0;
    }
  }

  doneReading(): void {
    this.trimmedSince = undefined;
  }

  /** Another store trimmed a pointer this one planned to: it is left out of the listing. */
  collided(pointer: string): void {
    this.children.delete(pointer);
    const e = this.entries.find((x) => x.pointer === pointer);
    if (e) e.read = 'gone';
  }

  /**
   * A plan was applied: its victims are gone, the pointer it created (if
   * known) is this store's, and `read` says what its job is (no read of it later).
   */
  applied(victims: Entry[], created: string | undefined, read?: JobRecord | 'plain'): void {
    for (const v of victims) {
      this.children.delete(v.pointer);
      this.trimmedSince?.add(v.pointer);
    }
    // a job known to be a pending child is remembered as one; one known as plain is not: a flow may
    // adopt it later (a duplicated id), so readRecords asks again in a queue that has children
    if (!created || typeof read !== 'object') return;
    this.children.set(created, read);
    if (this.children.size > CHILDREN_LIMIT) this.children.delete(this.children.keys().next().value as string);
  }

  private fill(bucket: number, names: string[]): void {
    const dir = this.store.layout.bucketOf(this.dir, bucket);
    const listed: Entry[] = [];
    for (const name of names) {
      if (!SEQUENTIAL.test(name)) continue;
      const pointer = `${dir}/${name}`;
      if (this.reserved.has(pointer) || this.trimmedSince?.has(pointer)) continue;
      listed.push({ id: idOfPointer(name), pointer, bucket, seq: sequenceOf(name) });
    }
    // sequence numbers parsed once per name, not per comparison
    listed.sort((a, b) => a.seq - b.seq);
    for (const e of listed) this.entries.push(e);
  }

  /** Lists the next bucket of the last read; false when there is none. */
  private async listNext(): Promise<boolean> {
    const bucket = this.buckets[this.listed + 1];
    if (bucket === undefined) return false;
    this.listed++;
    const names = await this.store.children(this.store.layout.bucketOf(this.dir, bucket));
    this.entries = this.entries.slice(this.head);
    this.head = 0;
    this.fill(bucket, names);
    return true;
  }

  /** Up to `n` of the oldest pointers no other plan deletes, reserved for `batch`. */
  async take(n: number, batch: TrimBatch): Promise<Entry[]> {
    const out: Entry[] = [];
    while (out.length < n) {
      const e = this.entries[this.head];
      if (!e) {
        if (await this.listNext()) continue;
        break;
      }
      if (this.kind === 'failed' && e.read === undefined) {
        await this.readRecords(this.entries.slice(this.head, this.head + RECORD_READ));
        continue;
      }
      this.head++;
      if (e.read === 'gone' || this.reserved.has(e.pointer)) continue;
      this.reserved.set(e.pointer, batch);
      out.push(e);
    }
    return out;
  }

  /**
   * The oldest pointer a younger batch's plan deletes, taken over for
   * `batch`: every pointer is taken, and those the plans in flight create
   * cannot be trimmed before they commit. The younger plan fails on it and
   * is planned again from a view that shows them.
   */
  steal(batch: TrimBatch, plans: Iterable<{ batch: TrimBatch; victims: Entry[] }>): Entry[] {
    const younger = [...plans]
      .filter((p) => p.batch.seq > batch.seq)
      .flatMap((p) => p.victims.filter((v) => this.reserved.get(v.pointer) === p.batch))
      .sort(byAge);
    const first = younger[0];
    if (!first) return [];
    this.reserved.set(first.pointer, batch);
    return [first];
  }

  /** Gives back the victims of a plan of `batch` that will not be sent, in order. */
  giveBack(victims: Entry[], batch: TrimBatch): void {
    const back = victims.filter((v) => this.reserved.get(v.pointer) === batch);
    if (back.length === 0) return;
    for (const v of back) this.reserved.delete(v.pointer);
    // back into the listing when it covers them (own pointers past it stay known as own)
    const left = this.entries.slice(this.head);
    const listed = new Set(left.map((e) => e.pointer));
    const last = this.buckets[this.listed] ?? -1;
    const again = back.filter((v) => v.bucket <= last && !listed.has(v.pointer));
    this.entries = [...again, ...left].sort(byAge);
    this.head = 0;
  }

  /** Releases the victims of a plan of `batch` that was applied or failed. */
  release(victims: Entry[], batch: TrimBatch): void {
    for (const v of victims) if (this.reserved.get(v.pointer) === batch) this.reserved.delete(v.pointer);
  }

  /**
   * Failed sets: reads the records of `entries` not read yet, to find the
   * children still pending (only in queues that got children of flows; the
   * records of this store's own finishes are known without a read).
   */
  private async readRecords(entries: Entry[]): Promise<void> {
    if (this.kind !== 'failed') return;
    for (const e of entries) if (e.read === undefined) e.read = this.children.get(e.pointer); // a pending child
    const batch = entries.filter((e) => e.read === undefined);
    if (batch.length === 0) return;
    const { layout, session } = this.store;
    // only a queue that ever got a child of a flow can hold one (one look per batch of reads)
    if (!(await session.exists(layout.flowChildren))) {
      for (const e of batch) e.read = 'plain';
      return;
    }
    const replies = await session.readMulti(batch.map((e) => ({ op: 'getData' as const, path: layout.job(e.id) })));
    batch.forEach((e, i) => {
      const r = replies[i];
      if (!r?.ok || !('data' in r)) {
        e.read = r && !r.ok && r.error instanceof NoNodeError ? 'gone' : 'plain';
        return;
      }
      try {
        const record = decodeRecord(r.data, layout.job(e.id));
        e.read = mayBePendingChild(record) ? record : 'plain';
      } catch {
        e.read = 'plain';
      }
    });
  }
}

function byAge(a: Entry, b: Entry): number {
  return a.bucket - b.bucket || a.seq - b.seq;
}
