/**
 * JobSource: finds and claims the next jobs for a worker.
 *
 * It keeps a short local view of the head of the queue (one scan serves many
 * claims), claims several jobs per transaction, and when nothing is
 * claimable it waits in the IdleLine: the first idle worker watches the
 * wake-up node `head` (rewritten by every transaction that makes a job
 * claimable) and polls every `drainDelay` (a dead worker's job, claimable
 * again once its session ends, and a safety net); the others wait for their
 * turn, so a new job wakes one worker, not all. The one right behind the
 * first polls too, so a first one that cannot act (partitioned, stopped,
 * killed) holds the others back no longer than about that; the ones further
 * back poll not at all: their watches tell them when they come to stand
 * right behind the first, and their session's Backstop read tells them
 * when the whole front of the line may be cut off (see IdleLine). Any
 * reconnection makes a waiting worker look at the line (and the head)
 * again, re-arming what the connection may have lost. Candidates
 * come from the HeadView (a short view of the head, spread at random after
 * collisions).
 *
 * An idle worker's wake-up, from the add's commit to the processor's start,
 * is the head's watch event, then two round trips: one read-only multi of
 * the claims and the head's listings (those the look before the wait made,
 * read ahead), then the claim multi with the claimed records read in its
 * flight (claim-read.ts). Neither is left to cut: a watch event carries no
 * data, and a claim must name the ready pointer, whose sequential name only
 * a listing tells (the wake-up node's data could not: the add's multi that
 * rewrites it learns the name from its own reply).
 *
 * Under a global limit (see LimitsView) claims take the limited path: a
 * rate-limited take says for how long; a take that found the global
 * concurrency reached waits in the same line, its first member watching the
 * claims (every slot is released with a claim) instead of the head.
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import { MalformedJobError } from '../errors.js';
import { type Candidate, type ClaimedJob, type ClaimResult, claimJobs } from '../protocol/claim.js';
import { admit, claimLimited, readLimitState } from '../protocol/limited-claims.js';
import { effectiveLimits, type RateLimit } from '../protocol/limits.js';
import { quarantineMalformed } from '../protocol/quarantine.js';
import type { QueueStore } from '../store.js';
import { backstopOf } from './backstop.js';
import { HeadView } from './head-view.js';
import { IdleLine } from './idle-line.js';
import { LimitsView } from './limits-view.js';

export interface JobSourceOptions {
  workerId: string;
  lockDuration: number;
  /** Slowest re-check while idle, ms. */
  idlePollMs: number;
  /** Told about nodes under the queue that are not zkq jobs (then moved to failed, or ignored). */
  onWarning: (err: Error) => void;
  /** BullMQ's worker `limiter` (validated by the caller): applies queue-wide. */
  limiter?: RateLimit | undefined;
  /** Longest wait of a rate-limited `claim`, ms (BullMQ's maximumRateLimitDelay). Default 30000. */
  maximumRateLimitDelay?: number | undefined;
  /** True while the worker may not take jobs (paused, closing): asked again right before a claim is sent. */
  held?: () => boolean;
  /** The version of `meta` the pause flag was last read unset at: claims check it (see ClaimOptions). */
  pauseVersion?: () => number | undefined;
}

/** A take that claimed nothing because of a limit: the rate limit (for `ttl` ms more) or the global concurrency. */
export interface Limited {
  limited: 'rate' | 'concurrency';
  ttl: number;
}

/** BullMQ's default maximumRateLimitDelay, ms. */
export const DEFAULT_MAX_RATE_LIMIT_DELAY_MS = 30_000;
/** Reads of the limits a take makes when other workers keep changing them first. */
const LIMITED_ROUNDS = 3;
/** Pause before looking at the line again after a failed look, ms. */
const LINE_RETRY_MS = 500;

export class JobSource {
  private readonly head: HeadView;
  private wake: (() => void) | undefined;
  /** A poke that came while no wait was armed. */
  private poked = false;
  private lineMoved: (() => void) | undefined;
  /** Told to stay out of the line (paused, closing) until the next idle wait. */
  private outOfLine = false;
  private readonly line: IdleLine;
  private readonly limits: LimitsView;
  /** The global concurrency the last take found reached, if it did. */
  private maxedAt: number | undefined;
  /** The version of the window node ZooKeeper's clock showed ended (it is never asked twice). */
  private endedWindow: number | undefined;

  constructor(
    private readonly store: QueueStore,
    /** Ids of the jobs this worker is running now. */
    inHand: () => Iterable<string>,
    private readonly o: JobSourceOptions,
  ) {
    this.head = new HeadView(store, inHand);
    this.line = new IdleLine(store);
    this.limits = new LimitsView(store, o.limiter, o.onWarning, () => this.poke());
  }

  /** Leaves the line of idle workers (the worker is busy, paused or closing). */
  leaveLine(): void {
    this.outOfLine = true;
    this.line.leave();
  }

  /** Ends a pending idle wait at once (new work, pause, close). */
  poke(): void {
    const w = this.wake;
    this.wake = undefined;
    // Kept when nobody waits yet (the idle wait is between two looks at the line): the next wait ends at once.
    if (w) w();
    else this.poked = true;
  }

  /**
   * Claims up to `max` jobs. Resolves with [] when idle for a while or poked,
   * so the caller can re-check pause and close.
   */
  async claim(max: number, onIdle: () => void): Promise<ClaimedJob[]> {
    const taken = await this.take(max);
    if (Array.isArray(taken)) return taken;
    if (taken === 'idle') onIdle();
    if (taken !== 'idle' && taken.limited === 'rate') {
      await this.sleep(Math.min(taken.ttl, this.o.maximumRateLimitDelay ?? DEFAULT_MAX_RATE_LIMIT_DELAY_MS));
    } else await this.waitForWork();
    return [];
  }

  /**
   * Claims up to `max` jobs without waiting: 'idle' when nothing is
   * claimable, [] when every candidate was taken by someone else first,
   * Limited when a global limit holds claims back.
   */
  async take(max: number): Promise<ClaimedJob[] | 'idle' | Limited> {
    await this.limits.start();
    if (this.limits.limited) return this.takeLimited(max);
    this.maxedAt = undefined;
    const picked = await this.head.candidates(max);
    if (picked === 'idle') return 'idle';
    const result = await claimJobs(this.store, picked, this.claimOptions());
    // held back before the claim was sent, or paused as it went: still there to take later
    this.head.putBack(result.left);
    return this.settle(result);
  }

  /** A take under a global limit: admitted by the limits read, in one transaction with them. */
  private async takeLimited(max: number): Promise<ClaimedJob[] | 'idle' | Limited> {
    for (let round = 0; round < LIMITED_ROUNDS; round++) {
      let state = await readLimitState(this.store);
      const w = state.window;
      // a window already seen ended reads as ended on purpose (0 ms): no second look at the clock
      if (w && w.version === this.endedWindow) state = { ...state, window: { ...w, ms: 0 } };
      let admission = admit(state, this.o.limiter, max, await this.limits.clock.now(), false);
      if (admission.kind === 'confirm') {
        const now = await this.store.serverNow();
        if (w && w.start + w.ms <= now) this.endedWindow = w.version;
        admission = admit(state, this.o.limiter, max, now, true);
      }
      this.maxedAt = admission.kind === 'maxed' ? admission.concurrency : undefined;
      if (admission.kind === 'rate') return { limited: 'rate', ttl: admission.ttl };
      if (admission.kind === 'maxed') return { limited: 'concurrency', ttl: 0 };
      if (admission.kind !== 'open') continue;
      // Admitted with no limit in force: no manual window either, claims can take the plain path again.
      const limits = effectiveLimits(state.settings?.fields, this.o.limiter);
      if (!limits.rate && !limits.concurrency) this.limits.windowGone();
      const picked = await this.head.candidates(admission.capacity);
      if (picked === 'idle') return 'idle';
      const result = await claimLimited(this.store, picked, this.claimOptions(), admission);
      this.head.putBack(result.left);
      const claimed = await this.settle(result);
      if (claimed.length > 0 || !result.raced) return claimed;
    }
    return [];
  }

  private claimOptions() {
    const { workerId, lockDuration, held, pauseVersion } = this.o;
    return { workerId, lockDuration, held, pauseVersion };
  }

  /** Notes collisions, sets foreign nodes aside; resolves with the jobs claimed. */
  private async settle(result: ClaimResult): Promise<ClaimedJob[]> {
    for (const { candidate, error, gone, stale } of result.skipped) {
      if (gone || stale !== undefined) {
        // nothing to claim there: no other worker was first (and the idle look drops it if it stays)
        this.head.noteOrphan(candidate.pointer, stale);
        continue;
      }
      if (error === undefined || error instanceof NodeExistsError) {
        // another worker was first: the view is behind the claims, the next take scans again
        this.head.collided();
      } else await this.setAside(candidate, error);
    }
    // Busy now: the next idle worker takes over the head, and sees only what is left.
    if (result.claimed.length > 0) this.line.leave();
    return result.claimed;
  }

  /** Waits `ms`, or less when poked (pause, close, new work). */
  private sleep(ms: number): Promise<void> {
    if (this.poked) {
      this.poked = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.poke(), ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  /** A pointer whose record is not a zkq job: failed with the reason when possible, else ignored. */
  private async setAside(candidate: Candidate, error: unknown): Promise<void> {
    this.o.onWarning(error instanceof Error ? error : new Error(String(error)));
    if (!(error instanceof MalformedJobError) || !(await quarantineMalformed(this.store, candidate, error))) {
      this.head.ignore(candidate.id);
    }
  }

  /** One stable watcher: re-arming it on every idle wait registers nothing twice. */
  private readonly onChange = (): void => this.poke();
  private readonly onLineMoved = (): void => this.lineMoved?.();

  /**
   * Waits for a change at the head or in the claims (first in line), a poke,
   * or the idle poll (`pollMs`, default `idlePollMs`; also right behind the
   * first). Further back in line, it waits for one of the two ahead of it to
   * leave, a reconnection or its Backstop's read, and looks at the line again,
   * without returning (but when the front may be cut off: see IdleLine): a
   * waiting worker reads only the line, until it finds itself right behind
   * the first.
   */
  async waitForWork(pollMs = this.o.idlePollMs): Promise<void> {
    this.outOfLine = false;
    while ((await this.waitOnce(pollMs)) === 'line') {
      // moved up the line: look where we stand now
    }
    this.head.outdate();
  }

  /**
   * Arms the data watch on the wake-up node. A queue that lacks it is being
   * deleted or made again: then the watch is on its creation, and nothing is
   * re-created here (that would leave a queue without its meta behind).
   */
  private async watchHead(): Promise<void> {
    const { session, layout } = this.store;
    try {
      await session.getData(layout.head, { watch: this.onChange });
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      if (await session.exists(layout.head, { watch: this.onChange })) this.poke();
    }
  }

  /**
   * The global concurrency was reached: watch the claims (a slot is only ever
   * released with its claim node), then look once more whether a job could
   * be admitted now.
   */
  private async watchSlots(): Promise<void> {
    await this.store.children(this.store.layout.claimsDir, this.onChange);
    const state = await readLimitState(this.store);
    const admission = admit(state, this.o.limiter, 1, await this.limits.clock.now(), false);
    if (admission.kind !== 'maxed') this.poke();
  }

  private waitOnce(pollMs: number): Promise<'wake' | 'line'> {
    if (this.poked) {
      this.poked = false;
      return Promise.resolve('wake');
    }
    const { session } = this.store;
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let leaveBackstop: (() => void) | undefined;
      // A watch may have been lost with the connection: look at the line (and the head) again.
      const reconnected = () => done('line');
      const done = (why: 'wake' | 'line') => {
        clearTimeout(timer);
        leaveBackstop?.();
        session.off('reconnected', reconnected);
        if (this.wake === wake) this.wake = undefined;
        if (this.lineMoved === moved) this.lineMoved = undefined;
        resolve(why);
      };
      const wake = () => done('wake');
      const moved = () => done('line');
      this.wake = wake;
      this.lineMoved = moved;
      session.on('reconnected', reconnected);
      const later = (ms: number) => {
        clearTimeout(timer);
        timer = setTimeout(() => this.poke(), ms);
      };
      this.line
        .position(this.onLineMoved)
        .then(async (where) => {
          // told to leave while this look was joining: a node it made would hold up the line
          if (this.outOfLine) return this.line.leave();
          if (this.wake !== wake) return;
          if (where === 'waiting') {
            // Told by its watches when it comes to stand right behind the first; the session's rare
            // Backstop read covers a front of the line cut off as a whole, and watches missed (then
            // it looks at the head and the line again).
            leaveBackstop = backstopOf(this.store).add({
              reads: () => this.line.backstopReads(),
              seen: (replies) => {
                if (this.line.frontStuck(replies) !== undefined && this.wake === wake) this.poke();
              },
            });
            return;
          }
          // Right behind the first since it was told (its watches): its idle poll is soon enough.
          // (Moved up to the first, it looks below, once its watch is set.)
          later(pollMs);
          // Right behind the head: a backup for a first one that cannot act, it looks at the idle poll.
          if (where === 'next') return;
          if (this.maxedAt !== undefined) {
            await this.watchSlots();
            return;
          }
          // Watch the wake-up node, then look once more: what arrived before the watch is seen now.
          // Only new work rewrites it; claims and finishes (and a dead worker's claim vanishing,
          // which the idle poll finds) do not wake the first in line.
          await this.watchHead();
          if (await this.head.workAtHead()) this.poke();
        })
        .catch(() => {
          if (this.wake === wake) later(LINE_RETRY_MS); // a failed look (connection loss, closing): look again soon
        });
    });
  }
}
