/**
 * LeaderLooks: when the housekeeping leader looks, and what a look of it
 * does (see the Housekeeper's header for the standbys and reserves).
 *
 * The leader's looks follow its watches, not a poll. It looks at the delayed
 * jobs (promoting what is due, removing the containers left empty: see
 * promoteDue) when a watch on the delayed containers fired, the earliest due
 * time its last look saw (or one noted since) came, its own promotions fired
 * the watches its look had set, or its session reconnected: a watch may have
 * gone with the connection (one lost with the session fires as lost). A due
 * job whose move lost a race (its record edited between the look's read and
 * its move: no watch fires) is looked at again after RETRY_MS, as a look
 * that failed. It
 * checks the schedulers (healSchedulers), at most every HEAL_EVERY_MS, when
 * the watch on their listing fired (one made or removed), when one its last
 * check read comes due (and again while one due is not advanced: its
 * iteration still to start, or just started), or its session reconnected.
 * Its backstop, in case a watch was lost all the same, is a look of each
 * kind at least every `backstopMs` (the Backstop's period: about a third of
 * the session timeout, at most 10 s). Idle, it sends nothing between two
 * backstop looks.
 *
 * A look walks on past the due jobs to the delayed containers ahead, to
 * remove those left empty (see promoteDue), but past a job not due yet only
 * once per `backstopMs`: on a busy queue the current hour always holds one,
 * and walking on at every look would add requests to each. So an empty
 * container ahead goes at the first walk ahead that finds it seen empty for
 * EMPTY_SETTLE_MS, busy queue or idle: within about two backstop periods.
 * The looks between keep the sightings ahead.
 */
import { performance } from 'node:perf_hooks';
import { type EmptySightings, type ProtocolOp, promoteDue } from '../protocol/index.js';
import { healSchedulers } from '../schedulers.js';
import type { QueueStore } from '../store.js';

/** Pause after a failed look of the leader, ms. */
const RETRY_MS = 500;
/** Shortest time between two checks of the schedulers by the leader, ms. */
const HEAL_EVERY_MS = 2000;

/** What the leader's looks need of their Housekeeper. */
export interface LeaderHost {
  readonly store: QueueStore;
  readonly fence: () => ProtocolOp[];
  /** Whether this process leads: a watch that fires wakes the looks only then. */
  readonly leading: boolean;
  /** The longest time between two looks of each kind, ms. */
  readonly backstopMs: number;
  /** Local ms until the earliest due time known (its last look's, or one noted since), 0 when past. */
  untilKnownDue(): number;
  /** A look at the delayed jobs begins (what was noted before it, it sees) or ended (the next due time it saw). */
  lookBegins(): void;
  lookEnded(nextDue: number | undefined): void;
  promoted(ids: string[]): void;
  healed(ids: string[]): void;
  report(err: unknown): void;
  /** Ends the promoter's sleep; `rearm` computes its end again. */
  wake(): void;
  rearm(): void;
}

export class LeaderLooks {
  /** A look at the delayed jobs is due at the next pass. */
  private delayedChanged = false;
  /** A check of the schedulers is due as soon as HEAL_EVERY_MS allows. */
  private schedulersChanged = false;
  private lastDelayedLook = Number.NEGATIVE_INFINITY;
  /** When a look last walked on past a job not due yet, or could have (performance.now()). */
  private lastAhead = Number.NEGATIVE_INFINITY;
  private lastHeal = Number.NEGATIVE_INFINITY;
  /** A failed look is tried again at this time (performance.now()). */
  private retryAt = Number.POSITIVE_INFINITY;
  /** When a scheduler the last check read may need healing (ZooKeeper's clock). */
  private healDue: number | undefined;
  /** Empty delayed containers the looks saw, removed once settled (see promoteDue). */
  private readonly empties: EmptySightings = new Map();

  constructor(private readonly host: LeaderHost) {}

  /** Looks of both kinds at the next pass (a new leader, a new connection). */
  lookSoon(): void {
    this.delayedChanged = true;
    this.schedulersChanged = true;
  }

  /** A pass failed: tried again after a pause. */
  failed(): void {
    this.retryAt = performance.now() + RETRY_MS;
  }

  /** One pass: the looks that are due. Resolves with how long to sleep after it, ms. */
  async pass(): Promise<() => number> {
    const began = performance.now();
    const lookDelayed = this.delayedChanged || this.retryAt <= began || this.untilDelayedLook(began) <= 0;
    const heal = this.untilHeal(began) <= 0;
    if (!lookDelayed && !heal) return () => this.wait();
    const now = await this.host.store.clock.earliest();
    if (lookDelayed) await this.promote(began, now);
    if (heal) await this.heal(began, now);
    return () => this.wait();
  }

  private async promote(began: number, now: number): Promise<void> {
    const { store, fence } = this.host;
    this.delayedChanged = false;
    this.retryAt = Number.POSITIVE_INFINITY;
    this.lastDelayedLook = began;
    this.host.lookBegins();
    const ahead = began - this.lastAhead >= this.host.backstopMs;
    if (ahead) this.lastAhead = began;
    const { promoted, nextDue, failure, raced } = await promoteDue(
      store,
      fence,
      this.onDelayedChange,
      now,
      this.empties,
      ahead,
    );
    if (promoted.length > 0) this.host.promoted(promoted);
    this.host.lookEnded(nextDue);
    // After promoting, look again at once: the promotion's own deletes fired the watches this
    // look set, so sleeping now would leave a job delayed meanwhile to the backstop.
    if (promoted.length > 0) this.delayedChanged = true;
    // a due job whose move lost a race (its record edited meanwhile: no watch fires) is looked at after a pause
    if (raced !== undefined) this.failed();
    // a due job whose record could not be read: reported, and looked at again after a pause
    if (failure !== undefined) {
      this.host.report(failure);
      this.failed();
    }
  }

  private async heal(began: number, now: number): Promise<void> {
    this.schedulersChanged = false;
    this.lastHeal = began;
    try {
      const { added, recheck } = await healSchedulers(this.host.store, now, this.onSchedulersChange);
      this.healDue = recheck;
      if (added.length > 0) this.host.healed(added);
    } catch (err) {
      this.healDue = now; // checked again after HEAL_EVERY_MS
      this.host.report(err); // the promotions of this pass stand
    }
  }

  /** Local ms until the next pass (0: at once). */
  private wait(): number {
    const at = performance.now();
    const delayed = this.delayedChanged ? 0 : this.untilDelayedLook(at);
    return Math.max(0, Math.min(delayed, this.retryAt - at, this.untilHeal(at)));
  }

  /** Local ms until a look at the delayed jobs unwoken: a known due time, or the backstop. */
  private untilDelayedLook(at: number): number {
    return Math.min(this.host.untilKnownDue(), this.lastDelayedLook + this.host.backstopMs - at);
  }

  /** Local ms until a check of the schedulers: as soon as it may when woken, else a due time or the backstop. */
  private untilHeal(at: number): number {
    const soonest = this.lastHeal + HEAL_EVERY_MS - at;
    if (this.schedulersChanged) return soonest;
    const { clock } = this.host.store;
    const due =
      this.healDue === undefined
        ? Number.POSITIVE_INFINITY
        : clock.toLocal(this.healDue) + clock.uncertainty - Date.now();
    return Math.max(soonest, Math.min(due, this.lastHeal + this.host.backstopMs - at));
  }

  private readonly onDelayedChange = (): void => {
    this.delayedChanged = true;
    if (this.host.leading) this.host.wake();
  };

  private readonly onSchedulersChange = (): void => {
    this.schedulersChanged = true;
    if (this.host.leading) this.host.rearm();
  };

  /** A connection moved on: a watch may have gone with it. */
  readonly onReconnected = (): void => {
    this.lookSoon();
    if (this.host.leading) this.host.wake();
  };
}
