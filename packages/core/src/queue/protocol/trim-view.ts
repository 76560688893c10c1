/**
 * What one store knows of a finished set (`completed/`, `failed/`), for the
 * trims planned inside finishes (see trims.ts): its count and the data
 * version of its node, from one read of the bucket stats; its oldest
 * pointers, from one listing of the oldest bucket (the next bucket is listed
 * only once those are used up; trim-pointers.ts). The count includes every
 * plan not settled yet, and the version every grow sent and not settled yet,
 * so a read never forgets a change still in flight.
 */
import { performance } from 'node:perf_hooks';
import { NoNodeError } from '../../zk/errors.js';
import { numberOf } from '../layout.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';
import { type Entry, type SetKind, SetPointers, type TrimBatch } from './trim-pointers.js';

export { type Entry, type SetKind, TrimBatch } from './trim-pointers.js';

/** A view older than this is read again at the next plan (others may have removed jobs), ms. */
const VIEW_TTL_MS = 2000;
/** Reads of the bucket stats before a refresh gives up (a bucket rolled under each one). */
const STAT_READS = 5;

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
  readonly pointers: SetPointers;
  private refreshing: Promise<void> | undefined;
  /** Woken when a plan is settled or dropped (made only while someone waits). */
  private changed: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    readonly store: ProtocolContext,
    readonly kind: SetKind,
  ) {
    this.pointers = new SetPointers(store, kind, this.dir);
  }

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
    this.pointers.reading();
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
        this.removeEmpty(names.filter((n, i) => sizes[i] === 0 && n !== names[names.length - 1]));
        const first = replies[paths.length + 2];
        this.pointers.read(
          names.filter((_, i) => (sizes[i] ?? 0) > 0),
          names[0] !== undefined && first?.ok && 'children' in first
            ? { bucket: names[0], names: first.children }
            : undefined,
        );
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
      this.pointers.doneReading();
    }
  }

  /** Empty buckets but the last are removed (readers keep containers small; writers re-create them). */
  private removeEmpty(numbers: number[]): void {
    for (const n of numbers) {
      // not empty any more, or gone: fine either way
      void this.store.session.delete(this.store.layout.bucketOf(this.dir, n)).catch(() => undefined);
    }
  }
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

const views = new WeakMap<ProtocolContext, Map<SetKind, SetView>>();

/** Reads both views of `store` now, so that its first finishes read nothing (errors are left for them). */
export async function prepareViews(store: ProtocolContext): Promise<void> {
  await Promise.all(
    (['completed', 'failed'] as const).map((k) =>
      viewOf(store, k)
        .refresh()
        .catch(() => undefined),
    ),
  );
}

/** The view of set `kind` of `store` (one per store: its finishes share it). */
export function viewOf(store: ProtocolContext, kind: SetKind): SetView {
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
