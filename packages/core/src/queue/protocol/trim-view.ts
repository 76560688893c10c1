/**
 * What one store knows of a finished set (`completed/`, `failed/`), for the
 * trims planned inside finishes (see trims.ts): its count and the data
 * version of its node, from one read of the bucket stats; its oldest
 * pointers, from one listing of the oldest bucket (the next bucket is listed
 * only once those are used up); and the pointers this store's own finishes
 * created. The count includes every plan not settled yet, and the version
 * every grow sent and not settled yet, so a read never forgets a change
 * still in flight.
 */
import { performance } from 'node:perf_hooks';
import { NoNodeError } from '../../zk/errors.js';
import { sequenceOf } from '../../zk/sequence.js';
import { idOfPointer, numberOf } from '../layout.js';
import { decodeRecord, type JobRecord } from '../record.js';
import type { QueueStore } from '../store.js';
import type { ProtocolOp } from './executor.js';
import { mayBePendingChild } from './flows.js';

export type SetKind = 'completed' | 'failed';

/** A view older than this is read again at the next plan (others may have removed jobs), ms. */
const VIEW_TTL_MS = 2000;
/** How long after a collision with another store's trims this one trims its own pointers first, ms. */
const CONTENDED_MS = 1000;
/** Failed records read at once to learn which victims are pending children. */
const RECORD_READ = 50;
/** Reads of the bucket stats before a refresh gives up (a bucket rolled under each one). */
const STAT_READS = 5;
/** Own pointers remembered at most (the oldest are forgotten first). */
const MINE_LIMIT = 100_000;
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
  /** Per view, the plan of this batch that carries the check of the set's version. */
  readonly checks = new Map<SetView, Plan>();
}

/** A plan made for one finish, until it is settled or dropped. */
export interface Plan {
  view: SetView;
  batch: TrimBatch;
  victims: Entry[];
  grows: boolean;
  /** The check or grow of the set's version, if the plan carries one: its version is set as it is sent. */
  fill?: ProtocolOp & { version?: number };
  /** Its multi was sent, and may have been applied. */
  sent: boolean;
  /** The view's generation (its reads) the plan was made from. */
  gen: number;
  /** What the plan adds to the set's count. */
  delta: number;
}

export class SetView {
  loaded = false;
  stale = false;
  gen = 0;
  private at = 0;
  /** The count as read, plus the plans not settled yet. */
  count = 0;
  /** The version as read, plus the grows sent and not settled yet: the next grow sent writes at it. */
  version = 0;
  readonly plans = new Set<Plan>();
  /** Pointers a plan not settled yet deletes, and its batch. */
  readonly reserved = new Map<string, TrimBatch>();
  /** Bucket numbers as read, oldest first, and the index of the one listed into `entries`. */
  private buckets: number[] = [];
  private listed = -1;
  private entries: Entry[] = [];
  private head = 0;
  /** Pointers this store's finishes created, not trimmed yet (parsed only when contended). */
  private readonly mine = new Map<string, Entry | undefined>();
  private contendedUntil = 0;
  /** Pointers trimmed while a refresh was reading (its listing may still show them). */
  private trimmedSince: Set<string> | undefined;
  private refreshing: Promise<void> | undefined;
  /** Woken when a plan is settled or dropped (made only while someone waits). */
  private changed: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    readonly store: QueueStore,
    readonly kind: SetKind,
  ) {}

  get dir(): string {
    return this.store.layout.finishedDir(this.kind);
  }

  /** The view must be read before the next plan (never read, or found wrong). */
  get unknown(): boolean {
    return !this.loaded || this.stale;
  }

  /** The view is old: it is read again in the background (plans go on from it meanwhile: a stale view is safe). */
  get old(): boolean {
    return performance.now() - this.at > VIEW_TTL_MS;
  }

  /** Another store trimmed a pointer this one planned to: trim own pointers first for a while. */
  collided(pointer: string): void {
    this.contendedUntil = performance.now() + CONTENDED_MS;
    this.forget(pointer);
  }

  /** A pointer known to be gone. */
  forget(pointer: string): void {
    this.mine.delete(pointer);
    const e = this.entries.find((x) => x.pointer === pointer);
    if (e) e.read = 'gone';
  }

  /**
   * A plan settled: its victims are gone, the pointer it created (if known)
   * is this store's, and `read` says what its job is (no read of it needed).
   */
  applied(victims: Entry[], created: string | undefined, read?: JobRecord | 'plain'): void {
    for (const v of victims) {
      this.mine.delete(v.pointer);
      this.trimmedSince?.add(v.pointer);
    }
    if (!created) return;
    this.mine.set(created, read === undefined ? undefined : { ...entryOf(created), read });
    if (this.mine.size > MINE_LIMIT) this.mine.delete(this.mine.keys().next().value as string);
  }

  notify(): void {
    this.changed?.resolve();
    this.changed = undefined;
  }

  /** Whether an older batch than `batch` has a plan in flight that grows (`any`: any plan). */
  blocked(batch: TrimBatch, any = false): boolean {
    for (const p of this.plans) if (p.batch.seq < batch.seq && (any || p.grows)) return true;
    return false;
  }

  /** Waits while `blocked`; true when it waited. */
  async waitOlder(batch: TrimBatch, any = false): Promise<boolean> {
    if (!this.blocked(batch, any)) return false;
    while (this.blocked(batch, any)) {
      this.changed ??= signal();
      await this.changed.promise;
    }
    return true;
  }

  refresh(): Promise<void> {
    this.refreshing ??= this.read().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** Reads the view again without waiting for it (a failed read leaves it old: the next plan tries again). */
  refreshSoon(): void {
    this.at = performance.now();
    void this.refresh().catch(() => undefined);
  }

  /** Reads count, version and the oldest bucket's pointers, in one request after the bucket names. */
  private async read(): Promise<void> {
    const { session, layout } = this.store;
    this.trimmedSince = new Set();
    try {
      for (let attempt = 1; ; attempt++) {
        const names = bucketNumbers(await this.store.children(this.dir));
        const paths = names.map((n) => layout.bucketOf(this.dir, n));
        const replies = await session.readMulti([
          { op: 'getData' as const, path: this.dir },
          ...paths.map((path) => ({ op: 'getData' as const, path })),
          { op: 'getChildren' as const, path: this.dir },
          ...(paths[0] ? [{ op: 'getChildren' as const, path: paths[0] }] : []),
        ]);
        // the settles of multis answered before this read land first: no plan is counted twice
        await new Promise((resolve) => setImmediate(resolve));
        const top = replies[0];
        if (!top?.ok || !('stat' in top)) throw top?.ok === false ? top.error : new NoNodeError(this.dir);
        const after = replies[paths.length + 1];
        const now = after?.ok && 'children' in after ? bucketNumbers(after.children) : [];
        if (now.some((n) => !names.includes(n))) {
          // a bucket rolled between the two reads: its pointers are not counted
          if (attempt >= STAT_READS) throw new Error(`the buckets of ${this.dir} kept changing`);
          continue;
        }
        const sizes = names.map((_, i) => {
          const r = replies[i + 1];
          return r?.ok && 'stat' in r ? r.stat.numChildren : 0;
        });
        this.version = top.stat.version;
        this.count = sizes.reduce((a, b) => a + b, 0);
        this.buckets = names.filter((_, i) => (sizes[i] ?? 0) > 0);
        this.removeEmpty(names.filter((n, i) => sizes[i] === 0 && n !== names[names.length - 1]));
        this.listed = -1;
        this.entries = [];
        this.head = 0;
        const first = replies[paths.length + 2];
        if (names[0] !== undefined && this.buckets[0] === names[0] && first?.ok && 'children' in first) {
          this.fill(names[0], first.children);
          this.listed = 0;
        }
        break;
      }
      for (const p of this.plans) {
        this.count += p.delta;
        if (p.grows && p.sent) this.version++;
      }
      this.loaded = true;
      this.stale = false;
      this.gen++;
      this.at = performance.now();
    } finally {
      this.trimmedSince = undefined;
    }
  }

  /** Empty buckets but the last are removed (readers keep containers small; writers re-create them). */
  private removeEmpty(numbers: number[]): void {
    for (const n of numbers) {
      // not empty any more, or gone: fine either way
      void this.store.session.delete(this.store.layout.bucketOf(this.dir, n)).catch(() => undefined);
    }
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

  /**
   * Up to `n` of the oldest pointers no other plan deletes, reserved for
   * `batch`. While contended, this store's own pointers go first: stores
   * that trim side by side then never pick the same ones.
   */
  async take(n: number, batch: TrimBatch): Promise<Entry[]> {
    const out: Entry[] = [];
    if (performance.now() < this.contendedUntil) {
      // own pointers in the order they were created (settled)
      const own: Entry[] = [];
      for (const [pointer, known] of this.mine) {
        if (own.length >= n) break;
        if (this.reserved.has(pointer)) continue;
        const e = known ?? entryOf(pointer);
        this.mine.set(pointer, e);
        if (e.read !== 'gone') own.push(e);
      }
      await this.readRecords(own);
      for (const e of own) {
        if (e.read === 'gone' || this.reserved.has(e.pointer)) continue;
        this.reserved.set(e.pointer, batch);
        out.push(e);
      }
    }
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
  steal(batch: TrimBatch): Entry[] {
    const younger = [...this.plans]
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
   * children still pending (in queues that got children of flows only).
   */
  private async readRecords(entries: Entry[]): Promise<void> {
    if (this.kind !== 'failed') return;
    // the records of this store's own finishes are known
    for (const e of entries) if (e.read === undefined) e.read = this.mine.get(e.pointer)?.read;
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

/** The entry of a pointer path `<set>/b-<n>/<name>`. */
function entryOf(pointer: string): Entry {
  const slash = pointer.lastIndexOf('/');
  const name = pointer.slice(slash + 1);
  const dir = pointer.slice(0, slash);
  return {
    id: idOfPointer(name),
    pointer,
    bucket: numberOf(dir.slice(dir.lastIndexOf('/') + 1)),
    seq: sequenceOf(name),
  };
}

function byAge(a: Entry, b: Entry): number {
  return a.bucket - b.bucket || a.seq - b.seq;
}

function bucketNumbers(names: string[]): number[] {
  return names
    .filter((n) => n.startsWith('b-'))
    .map(numberOf)
    .sort((a, b) => a - b);
}

function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const views = new WeakMap<QueueStore, Map<SetKind, SetView>>();

/** Reads both views of `store` now, so that its first finishes read nothing (errors are left for them). */
export async function prepareViews(store: QueueStore): Promise<void> {
  await Promise.all(
    (['completed', 'failed'] as const).map((k) =>
      viewOf(store, k)
        .refresh()
        .catch(() => undefined),
    ),
  );
}

/** The view of set `kind` of `store` (one per store: its finishes share it). */
export function viewOf(store: QueueStore, kind: SetKind): SetView {
  let byKind = views.get(store);
  if (!byKind) {
    byKind = new Map();
    views.set(store, byKind);
  }
  let view = byKind.get(kind);
  if (!view) {
    view = new SetView(store, kind);
    byKind.set(kind, view);
  }
  return view;
}
