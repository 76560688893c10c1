/**
 * ServerClock: this process's estimate of ZooKeeper's time. Due times of
 * delayed jobs and of scheduler ticks are written and judged on ONE clock,
 * ZooKeeper's: a producer or worker whose clock runs seconds off still delays
 * a job by what it asked, and a leader whose clock is off promotes it neither
 * early nor late. The offset is measured by a write to the `clock` node (its
 * mtime, against the midpoint of the round trip) and measured again every
 * REFRESH_MS; until the first measure, and when a measure fails, the last
 * known offset (at first 0: the local clock) is used. The write's mtime lies
 * somewhere within the round trip, so the offset is known to half of it
 * (`uncertainty`): whoever judges whether a due time has come takes it off
 * (`earliest`), and starts nothing early. The offset is kept against this
 * process's monotonic clock, not its wall clock: a wall clock stepped between
 * two measures (an NTP step, a resumed machine) moves neither ZooKeeper's
 * time as judged here nor a due time computed from a local one (`fromLocal`).
 *
 * On a session opened with `clock: 'process'` (tests in one process) the
 * clock is this process's `Date.now()` with no offset, never measured, so
 * fake timers move every due time judged through it.
 */
import type { Session } from '../../zk/session.js';

/** What the clock measures with: the session, and a write that reads ZooKeeper's time (store.ts: serverNow). */
export interface ClockSource {
  readonly session: Pick<Session, 'clock'>;
  serverNow(): Promise<number>;
}

/** How often the offset is measured again, ms. */
const REFRESH_MS = 30_000;

/** This process's monotonic clock, ms on the epoch's scale (never stepped). */
function monotonic(): number {
  return performance.timeOrigin + performance.now();
}

export class ServerClock {
  /** ZooKeeper's time minus the monotonic clock (at first the wall clock's lead over it). */
  private offset = Date.now() - monotonic();
  private spread = 0;
  private measuredAt = Number.NEGATIVE_INFINITY;
  private measuring: Promise<void> | undefined;

  constructor(private readonly store: ClockSource) {}

  /** Whether this process's clock is the one (`clock: 'process'`): nothing to measure. */
  private get local(): boolean {
    return this.store.session.clock === 'process';
  }

  /** ZooKeeper's time now, measured again first when the last measure is old. */
  async now(): Promise<number> {
    if (this.local) return Date.now();
    if (this.stale()) await this.refresh();
    return monotonic() + this.offset;
  }

  /** How far ZooKeeper's time may be from `now()`, ms: half the round trip of the last measure. */
  get uncertainty(): number {
    return this.spread;
  }

  /** ZooKeeper's time now at the earliest: a due time at or before it has come, whatever the measure's error. */
  async earliest(): Promise<number> {
    const now = await this.now();
    return now - this.spread;
  }

  /**
   * ZooKeeper's time when the local clock reads `local` (read as so far
   * from the local clock's now), by the last offset known; an old one is
   * measured again in the background for the next call.
   */
  fromLocal(local: number): number {
    if (this.local) return local;
    if (this.stale()) void this.refresh();
    return local - Date.now() + monotonic() + this.offset;
  }

  private stale(): boolean {
    return performance.now() - this.measuredAt >= REFRESH_MS;
  }

  private refresh(): Promise<void> {
    this.measuring ??= this.measure().finally(() => {
      this.measuring = undefined;
    });
    return this.measuring;
  }

  /** The local time at which ZooKeeper's clock reads `serverTime`. */
  toLocal(serverTime: number): number {
    if (this.local) return serverTime;
    return serverTime - this.offset - monotonic() + Date.now();
  }

  private async measure(): Promise<void> {
    const t0 = monotonic();
    try {
      const server = await this.store.serverNow();
      const t1 = monotonic();
      this.offset = server - (t0 + t1) / 2;
      this.spread = (t1 - t0) / 2;
      this.measuredAt = performance.now();
    } catch {
      // keep the last offset; try again at the next look
    }
  }
}
