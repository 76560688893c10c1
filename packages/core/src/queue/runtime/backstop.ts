/**
 * Backstop: one rare read per worker session for the parts of a worker that
 * stand back (a housekeeper that is neither the leader nor one of its first
 * standbys, an idle worker further back in line than right behind the
 * first). What they read goes in one read-only multi, made every
 * `period` ms while any of them has something to read.
 *
 * Why so rare, and why one request: the workers standing back are all but a
 * handful of a queue's idle workers, so what they send sets the idle cost of
 * the queue. A session sends a probe of its own after a third of its timeout
 * without a request (zk/heartbeat.ts); a look made a little more often than
 * that takes the probe's place, so a session whose only request is this one
 * costs the server no more than a quiet session does. Hence the period: a
 * third of the session's timeout less BACKSTOP_MARGIN_MS, at most
 * BACKSTOP_MAX_MS, at least BACKSTOP_MIN_MS.
 *
 * The parts of one store share one backstop (`backstopOf`). A failed read is
 * dropped: the next one comes a period later. Parts act on their replies;
 * none of them writes here.
 */
import { performance } from 'node:perf_hooks';
// node:timers' own functions, not the globals: a test that fakes the global timers (sinon, as BullMQ's
// suite does) and jumps its clock a month must not run a month of looks, one after the other, in the jump
import { clearTimeout, setTimeout } from 'node:timers';
import type { ReadOp, ReadResult } from '../../zk/multi-size.js';
import type { QueueStore } from '../store.js';

/** Longest period between two looks, ms. */
export const BACKSTOP_MAX_MS = 10_000;
/** Shortest period between two looks, ms. */
const BACKSTOP_MIN_MS = 500;
/** How much sooner than the session's probe a look comes, ms. */
const BACKSTOP_MARGIN_MS = 500;

/** What a part reads at a look (nothing: it sits this one out), and what it makes of the replies. */
export interface BackstopPart {
  reads(): ReadOp[];
  seen(replies: ReadResult[]): void;
}

const backstops = new WeakMap<QueueStore, Backstop>();

/** The backstop of a worker's store (one per session's store). */
export function backstopOf(store: QueueStore): Backstop {
  let b = backstops.get(store);
  if (!b) {
    b = new Backstop(store);
    backstops.set(store, b);
  }
  return b;
}

export class Backstop {
  private readonly parts = new Set<BackstopPart>();
  private timer: NodeJS.Timeout | undefined;
  private looking = false;
  /** `soon()` came during a look (which may have read before its part was in): look again at once. */
  private again = false;
  private lastLook = Number.NEGATIVE_INFINITY;

  constructor(private readonly store: QueueStore) {}

  /** The time between two looks, ms (see the header). */
  get period(): number {
    const probeAfter = this.store.session.sessionTimeout / 3;
    return Math.max(BACKSTOP_MIN_MS, Math.min(BACKSTOP_MAX_MS, probeAfter - BACKSTOP_MARGIN_MS));
  }

  /** Adds a part; the returned function removes it. Looks run while any part is in. */
  add(part: BackstopPart): () => void {
    this.parts.add(part);
    this.arm();
    return () => {
      this.parts.delete(part);
      if (this.parts.size === 0) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** Looks soon (a part that just joined, or changed what it reads), unless a look is under way. */
  soon(): void {
    if (this.looking) this.again = true;
    if (this.looking || this.parts.size === 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.look(), 0);
    this.timer.unref();
  }

  private arm(): void {
    if (this.timer || this.looking || this.parts.size === 0) return;
    const wait = Math.max(0, this.lastLook + this.period - performance.now());
    this.timer = setTimeout(() => void this.look(), wait);
    this.timer.unref();
  }

  private async look(): Promise<void> {
    this.timer = undefined;
    if (this.store.session.closed) return;
    this.looking = true;
    this.lastLook = performance.now();
    try {
      const asked = [...this.parts].map((part) => ({ part, reads: part.reads() }));
      const reads = asked.flatMap((a) => a.reads);
      if (reads.length === 0) return;
      const replies = await this.store.session.readMulti(reads).catch(() => undefined);
      if (!replies) return;
      let at = 0;
      for (const { part, reads: mine } of asked) {
        const own = replies.slice(at, at + mine.length) as ReadResult[];
        at += mine.length;
        if (mine.length > 0 && this.parts.has(part)) part.seen(own);
      }
    } finally {
      this.looking = false;
      if (this.again) {
        this.again = false;
        this.soon();
      } else this.arm();
    }
  }
}
