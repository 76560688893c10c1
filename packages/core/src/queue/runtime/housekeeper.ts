/**
 * Housekeeper: what every worker does for the whole queue, and what the
 * elected one does besides.
 *
 * Every worker with housekeeping on promotes delayed jobs when they are due
 * and gives schedulers left without their next iteration that iteration
 * back, so no single process is needed for either: a leader that dies (its
 * session lingering until it expires) costs delayed jobs, retries and
 * schedulers a standby's grace, not a session timeout. Due times are judged
 * on ZooKeeper's clock, at the earliest it can be by the promoter's last
 * measure (ServerClock.earliest), so a promoter with a skewed clock is
 * neither early nor late. Promotions
 * are fenced by the jobs themselves (see promoteDue): two promoters never
 * both move a job. So that they do not all act at each due time, nor all
 * look while nothing is due:
 * - the leader promotes at the due time, and looks only when there may be
 *   something to do: a watch on the delayed containers fired, the earliest
 *   due time its last look saw came, or its session reconnected; it polls
 *   only as a backstop, once per Backstop period (runtime/leader-looks.ts);
 * - the first STANDBYS workers behind it in the election's line are
 *   standbys: they promote only what is overdue by STANDBY_GRACE_MS (plus a
 *   random share of it, so standbys do not all wake together), waking at
 *   the earliest due time they know (from their last look, or noted by
 *   their own writes: `noteDue`) plus that grace. They watch what their
 *   looks read, as the leader does, and look again when a watch fired (or
 *   the session reconnected), STANDBY_WATCH_GAP_MS after their last look:
 *   as soon as they polled before, so they learn a due time no later than
 *   then; with nothing changed there is nothing to learn, and they look
 *   only when they check the schedulers, every STANDBY_HEAL_EVERY_MS (a
 *   backstop, should a watch be lost all the same). A leader that
 *   is stuck does not stop a standby's watches. While the leader works, a
 *   standby's look finds nothing to do; once it is gone, the first standby
 *   to look promotes;
 * - every other worker is a reserve: it looks only when its Backstop's read
 *   (one read-only multi per session, about every third of the session
 *   timeout, in place of the session's own probe) finds delayed containers
 *   (or schedulers, at most every RESERVE_HEAL_EVERY_MS), and reads there
 *   its place in the election's line too: a reserve that comes to stand
 *   among the first STANDBYS behind the leader (those ahead left) becomes a
 *   standby. A reserve whose look promoted stands in for the front that did
 *   not: it keeps to the due times as a standby does, until a look at a due
 *   time finds the job promoted by another, or nothing is left to promote.
 * So a dead leader (its session lingering) costs delayed jobs a standby's
 * grace; a leader dead together with its standbys (one process holding the
 * first places of the line, SIGKILLed or stopped) costs them at most a
 * Backstop period (BACKSTOP_MAX_MS, 10 s) plus the grace, not a session
 * timeout. Idle, with no delayed job and no scheduler, the queue's
 * promoters send the leader's backstop looks, the standbys' polls and one
 * Backstop read per other worker, whatever their number. Delayed containers
 * left empty are removed: once past, by any promoter; before (their jobs
 * promoted, by hand or removed), by the leader once it saw them empty for
 * EMPTY_SETTLE_MS (on a busy queue at its walk ahead, once per Backstop
 * period: leader-looks.ts), fenced, all but the tail bucket of the current hour
 * (where adders write now), which stays until the hour is past. Until then a
 * reserve's Backstop read finds them, and it looks (a few listings).
 * A failed promotion is retried after a pause. Promoters also check the
 * schedulers (healSchedulers): a standby every STANDBY_HEAL_EVERY_MS, a
 * reserve every RESERVE_HEAL_EVERY_MS, the leader when one is made or removed
 * or comes due (leader-looks.ts).
 *
 * Worker daemons join the election under `leader/` (LeaderElection). The
 * leader alone also revokes stale claims and sweeps what dead clients left
 * (runtime/leader-sweeps.ts).
 * Every write of the leader carries the election's fence: a deposed leader's
 * writes fail instead of racing the new one's, so two leaders never act at once.
 * A write refused so (fenced, or its fence refused while the election is
 * suspended or lost) ends its look or sweep without an `error` event: a
 * network blip is no error; the next term looks again.
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { NotLeaderError } from '../../recipes/errors.js';
import { LeaderElection } from '../../recipes/leader-election.js';
import type { ReadOp, ReadResult } from '../../zk/multi-size.js';
import { FencedError, type ProtocolOp, promoteDue } from '../protocol/index.js';
import { healSchedulers } from '../schedulers.js';
import type { QueueStore } from '../store.js';
import { type Backstop, backstopOf } from './backstop.js';
import { LeaderLooks } from './leader-looks.js';
import { LeaderSweeps } from './leader-sweeps.js';
import type { ServerClock } from './server-clock.js';

/** Pause after a failed promotion round, ms. */
const PROMOTE_RETRY_MS = 500;
/** How long past its due time a standby leaves a job to the leader, ms (plus up to as much again, at random). */
const STANDBY_GRACE_MS = 100;
/** How long after a known due time plus its grace a standby wakes, ms: timers and clocks round apart. */
const WAKE_MARGIN_MS = 3;
/** Shortest time between two looks of a standby while the leader promotes, ms. */
const STANDBY_GAP_MS = 250;
/** Shortest time between a standby's look and the next one its watches wake (it polled at this pace before), ms. */
const STANDBY_WATCH_GAP_MS = 2000;
/** How often a standby checks the schedulers, ms. */
const STANDBY_HEAL_EVERY_MS = 10_000;
/** How often a reserve checks the schedulers (when there are any), ms. */
const RESERVE_HEAL_EVERY_MS = 60_000;
/** How many workers right behind the leader in the election's line are standbys. */
export const STANDBYS = 2;
/** How often receipts are swept, ms. */
const RECEIPT_SWEEP_MS = 60_000;

export interface HousekeeperEvents {
  elected: [];
  deposed: [];
  stalled: [jobId: string];
  promoted: [jobIds: string[]];
  /** Schedulers given back their next iteration: the ids of those iterations. */
  healed: [jobIds: string[]];
  error: [error: unknown];
}

export class Housekeeper extends EventEmitter<HousekeeperEvents> {
  private readonly election: LeaderElection;
  /** The leader's revocations and sweeps. */
  private readonly sweeps: LeaderSweeps;
  /** Due times are judged on ZooKeeper's clock, not this process's. */
  private get clock(): ServerClock {
    return this.store.clock;
  }
  private stalledTimer: NodeJS.Timeout | undefined;
  private promoting: Promise<void> | undefined;
  /** The promoter's sleep: `wake` ends it, `rearm` sets its end again (see sleep). */
  private sleeper: { wake: () => void; rearm: () => void } | undefined;
  /** When the leader looks, and its looks. */
  private readonly looks: LeaderLooks;
  /** The earliest due time the last look saw (ZooKeeper's clock). */
  private knownDue: number | undefined;
  /** The earliest due time noted since the last look began (it may not have seen it). */
  private notedDue: number | undefined;
  /** When the promoter's last look ended (performance.now()). */
  private lastLook = Number.NEGATIVE_INFINITY;
  private lastHeal = Number.NEGATIVE_INFINITY;
  /** How long past due the standby's next look leaves jobs to the leader, ms. */
  private grace = STANDBY_GRACE_MS;
  private leading = false;
  /** Among the first STANDBYS behind the leader, as of the last Backstop read. */
  private standby = false;
  /** A reserve whose look promoted: it looks as a standby does (see the header). */
  private standingIn = false;
  /** The Backstop's read found something for a reserve to look at. */
  private called = false;
  /** A watch of the standby's last look fired (or its connection moved on): it looks again. */
  private standbyChanged = false;
  private readonly backstop: Backstop;
  private leaveBackstop: (() => void) | undefined;
  private closed = false;
  private checking = false;

  constructor(
    private readonly store: QueueStore,
    workerId: string,
    private readonly stalledInterval: number,
    /**
     * The leader's backstop: the longest time between two of its looks, ms
     * (default: the Backstop's period; tests stretch it to prove that watches wake it).
     */
    private readonly promotePollMs?: number,
    /** How often receipts, orphans, cancel requests and deduplication keys are swept, ms (tests shorten it). */
    sweepMs = RECEIPT_SWEEP_MS,
  ) {
    super();
    this.sweeps = new LeaderSweeps(store, this.fence, sweepMs);
    this.election = new LeaderElection(store.session, store.layout.leaderDir, { id: workerId });
    this.election.on('elected', () => this.lead());
    this.election.on('deposed', () => this.stepDown());
    this.backstop = backstopOf(store);
    const keeper = this;
    this.looks = new LeaderLooks({
      store,
      fence: this.fence,
      get leading() {
        return keeper.leading;
      },
      get backstopMs() {
        return keeper.promotePollMs ?? keeper.backstop.period;
      },
      untilKnownDue: () => this.untilKnownDue(0),
      lookBegins: () => {
        this.notedDue = undefined;
      },
      lookEnded: (nextDue) => {
        this.knownDue = nextDue;
      },
      promoted: (ids) => this.emit('promoted', ids),
      healed: (ids) => this.emit('healed', ids),
      report: (err) => this.report(err),
      wake: () => this.sleeper?.wake(),
      rearm: () => this.sleeper?.rearm(),
    });
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Joins the election and starts promoting (as a standby until elected). */
  async start(): Promise<void> {
    if (!this.promoting) this.store.session.on('reconnected', this.onReconnected);
    this.promoting ??= this.promoteLoop();
    await this.election.start();
    if (this.closed || this.leaveBackstop) return;
    this.leaveBackstop = this.backstop.add({ reads: () => this.backstopReads(), seen: (r) => this.backstopSeen(r) });
    this.backstop.soon(); // learn this worker's place now: a standby acts from the start
  }

  /** A standby (or a reserve standing in) looks at the due times; a reserve waits for the Backstop. */
  private get reserve(): boolean {
    return !this.leading && !this.standby && !this.standingIn;
  }

  private backstopReads(): ReadOp[] {
    if (this.leading) return [];
    const { leaderDir, delayedDir, schedulersDir } = this.store.layout;
    return [
      { op: 'getChildren', path: leaderDir },
      { op: 'getChildren', path: delayedDir },
      { op: 'getChildren', path: schedulersDir },
    ];
  }

  private backstopSeen([line, delayed, schedulers]: ReadResult[]): void {
    if (line?.ok && 'children' in line) {
      const place = this.election.placeAmong(line.children);
      const standby = place !== undefined && place >= 1 && place <= STANDBYS;
      const woken = standby && !this.standby;
      this.standby = standby;
      if (woken) this.sleeper?.wake();
    }
    if (!this.reserve) return;
    const some = (r: ReadResult | undefined) => r?.ok === true && 'children' in r && r.children.length > 0;
    const healDue = performance.now() - this.lastHeal >= RESERVE_HEAL_EVERY_MS;
    if (some(delayed) || (some(schedulers) && healDue)) {
      this.called = true;
      this.sleeper?.wake();
    }
  }

  /**
   * Steps down, stops promoting and leaves the election. A promotion pass in
   * flight is not waited for: once the election node is gone a leader's
   * writes fail their fence (a standby's, fenced by the jobs alone, are as
   * good as any other promoter's), and once the
   * session closes its reads end; waiting for it would hold close() up for
   * as long as its reads are retried (half a minute while ZooKeeper is
   * unreachable).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.store.session.off('reconnected', this.onReconnected);
    this.leaveBackstop?.();
    this.stepDown();
    this.sleeper?.wake();
    await this.election.close();
  }

  /**
   * A due time (ZooKeeper's clock) this process wrote: a retry's backoff (a
   * scheduler's next iteration is not noted: a standby learns it from its
   * next look). A standby wakes for it without looking first.
   */
  noteDue(due: number): void {
    if (this.notedDue !== undefined && this.notedDue <= due) return;
    this.notedDue = due;
    this.sleeper?.rearm();
  }

  private readonly fence = (): ProtocolOp[] => [{ ...this.election.fence(), role: 'fence' }];

  /** A connection moved on: a watch may have gone with it (the leader's and a standby's alike). */
  private readonly onReconnected = (): void => {
    this.looks.onReconnected();
    this.onStandbyChange();
  };

  /** A standby's watch fired: it looks again, STANDBY_WATCH_GAP_MS after its last look (sooner at a due time). */
  private readonly onStandbyChange = (): void => {
    this.standbyChanged = true;
    if (!this.leading && !this.reserve) this.sleeper?.rearm();
  };

  private lead(): void {
    if (this.leading || this.closed) return;
    this.leading = true;
    this.emit('elected');
    this.sweeps.begin();
    this.stalledTimer = setInterval(() => {
      if (this.checking) return;
      this.checking = true;
      this.checkStalled()
        .then(() => this.sweeps.maybeSweep(() => this.leading))
        .catch((err) => this.report(err))
        .finally(() => {
          this.checking = false;
        });
    }, this.stalledInterval);
    this.stalledTimer.unref();
    this.looks.lookSoon(); // promote as the leader from now on, its watches set
    this.sleeper?.wake();
  }

  private stepDown(): void {
    if (!this.leading) return;
    this.leading = false;
    clearInterval(this.stalledTimer);
    this.sweeps.end();
    this.sleeper?.wake();
    this.emit('deposed');
  }

  /**
   * Emits `error`, but for a leader's write refused its leadership: fenced
   * at the server (FencedError), or refused its fence before sending
   * (NotLeaderError: the election suspended or lost meanwhile). Either ends
   * the look or sweep quietly; the next term looks again.
   */
  private report(err: unknown): void {
    if (this.closed || err instanceof FencedError || err instanceof NotLeaderError) return;
    this.emit('error', err);
  }

  /** Revokes every claim whose lease ran out unrenewed; resolves with their ids. */
  async checkStalled(): Promise<string[]> {
    if (!this.leading) return [];
    const revoked = await this.sweeps.revokeStale(() => this.leading);
    for (const id of revoked) this.emit('stalled', id);
    return revoked;
  }

  private async promoteLoop(): Promise<void> {
    while (!this.closed) {
      const leading = this.leading;
      if (this.reserve && !this.called) {
        await this.sleep(() => Number.POSITIVE_INFINITY); // until the Backstop calls, or a new role
        continue;
      }
      this.called = false;
      let wait: () => number;
      try {
        wait = leading ? await this.looks.pass() : await this.look();
      } catch (err) {
        this.report(err);
        this.looks.failed();
        wait = () => PROMOTE_RETRY_MS;
      }
      this.lastLook = performance.now();
      if (leading !== this.leading) continue; // a new role
      await this.sleep(wait);
    }
  }

  /**
   * A standby's (or a reserve's) look at the delayed jobs, promoting what is
   * overdue by its grace; resolves with how long to sleep after it, ms.
   */
  private async look(): Promise<() => number> {
    this.notedDue = undefined; // what was written before this look, it sees
    this.standbyChanged = false;
    // a standby (or a reserve standing in) watches what it reads; a reserve sets no watch
    const watch = this.reserve ? undefined : this.onStandbyChange;
    const now = await this.clock.earliest();
    // a standby judges with the grace it woke for, and draws the next one
    const grace = this.grace;
    this.grace = STANDBY_GRACE_MS * (1 + Math.random());
    // a due time known to have come: a look that finds it promoted already saw the front at work
    const dueCame = this.knownDue !== undefined && this.knownDue <= now - grace;
    const { promoted, nextDue, failure } = await promoteDue(this.store, undefined, watch, now - grace);
    if (promoted.length > 0) this.emit('promoted', promoted);
    this.knownDue = nextDue;
    if (!this.standby) {
      if (promoted.length > 0) this.standingIn = true;
      else if (dueCame || nextDue === undefined) this.standingIn = false;
    }
    await this.maybeHeal(now);
    // a due job whose record could not be read: reported, and looked at again after a pause
    if (failure !== undefined) {
      this.report(failure);
      return () => PROMOTE_RETRY_MS;
    }
    // a reserve waits for its Backstop to call again
    if (this.reserve) return () => Number.POSITIVE_INFINITY;
    // a standby that promoted stands in for a leader that does not: it keeps to the due times
    const gap = promoted.length > 0 ? 0 : STANDBY_GAP_MS;
    return () => {
      const since = performance.now() - this.lastLook;
      // woken by a watch no sooner than it polled before; unwoken, as a backstop (a watch lost all the
      // same), when it checks the schedulers anyway
      const unwoken = this.standbyChanged ? STANDBY_WATCH_GAP_MS : STANDBY_HEAL_EVERY_MS;
      return Math.min(Math.max(gap - since, this.untilKnownDue(this.grace)), unwoken - since);
    };
  }

  /** Local ms until the earliest known due time plus `grace` (0 when past, infinite when none). */
  private untilKnownDue(grace: number): number {
    const due = Math.min(this.knownDue ?? Number.POSITIVE_INFINITY, this.notedDue ?? Number.POSITIVE_INFINITY);
    if (due === Number.POSITIVE_INFINITY) return due;
    // by the earliest ZooKeeper's time can be (see look): waking sooner would only look again
    const ms = this.clock.toLocal(due) + this.clock.uncertainty + grace - Date.now();
    // a standby a few ms after it, when it is to come: a wake that rounds a millisecond early finds the
    // job not yet past its grace, and would look again only STANDBY_GAP_MS later (the leader, with no
    // grace, wakes at the due time: a look that comes early finds the job and wakes at it again)
    return ms <= 0 ? 0 : grace > 0 ? ms + WAKE_MARGIN_MS : ms;
  }

  private async maybeHeal(now: number): Promise<void> {
    const every = this.standby ? STANDBY_HEAL_EVERY_MS : RESERVE_HEAL_EVERY_MS;
    if (performance.now() - this.lastHeal < every) return;
    this.lastHeal = performance.now();
    try {
      const { added } = await healSchedulers(this.store, now);
      if (added.length > 0) this.emit('healed', added);
    } catch (err) {
      this.report(err); // the promotions of this look stand; the next check tries again
    }
  }

  /** Sleeps for `wait()` ms; `rearm` computes it again (a due time noted), `wake` ends the sleep. */
  private sleep(wait: () => number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let over = false;
      const done = () => {
        if (over) return;
        over = true;
        clearTimeout(timer);
        this.sleeper = undefined;
        resolve();
      };
      const arm = () => {
        if (over) return;
        clearTimeout(timer);
        const ms = wait();
        if (ms <= 0) done();
        else timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
      };
      this.sleeper = { wake: done, rearm: arm };
      if (this.closed) done();
      else arm();
    });
  }
}
