/**
 * JobSource: finds and claims the next jobs for a worker.
 *
 * It keeps a short local view of the head of the queue (one scan serves many
 * claims), claims several jobs per transaction, and when nothing is
 * claimable it waits in the IdleLine: the first idle worker watches the
 * wake-up node `head` (rewritten by every transaction that makes a job
 * claimable) and polls every `drainDelay` (a dead worker's job, claimable
 * again once its session ends, and a safety net); the others wait for their
 * turn, so a new job wakes one worker, not all. Workers that collide on the
 * same jobs start taking them from a random offset within the head, so they
 * spread instead of racing for the single smallest node; a lone worker
 * always takes the head in order.
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import { MalformedJobError } from '../errors.js';
import { type Candidate, type ClaimedJob, claimJobs, quarantineMalformed } from '../protocol/attempts.js';
import { scanHead } from '../protocol/moves.js';
import type { QueueStore } from '../store.js';
import { IdleLine } from './idle-line.js';

export interface JobSourceOptions {
  workerId: string;
  lockDuration: number;
  /** Slowest re-check while idle, ms. */
  idlePollMs: number;
  /** Told about nodes under the queue that are not zkq jobs (then moved to failed, or ignored). */
  onWarning: (err: Error) => void;
}

/** A view of the head older than this is scanned again (bounds priority inversion). */
const VIEW_MAX_AGE_MS = 100;
/** How long after a collision claims keep spreading, ms. */
const SPREAD_FOR_MS = 2000;
/** Pause before looking at the line again after a failed look, ms. */
const LINE_RETRY_MS = 500;

export class JobSource {
  private view: Candidate[] = [];
  private viewAt = 0;
  /** The last scan returned less than it asked for: it saw every claimable job. */
  private sawWholeHead = false;
  private lastCollision = 0;
  private wake: (() => void) | undefined;
  /** A poke that came while no wait was armed. */
  private poked = false;
  private lineMoved: (() => void) | undefined;
  /** Told to stay out of the line (paused, closing) until the next idle wait. */
  private outOfLine = false;
  private readonly line: IdleLine;
  /** Ids of foreign pointers this worker leaves alone. */
  private readonly ignored = new Set<string>();

  constructor(
    private readonly store: QueueStore,
    /** Ids of the jobs this worker is running now. */
    private readonly inHand: () => Iterable<string>,
    private readonly o: JobSourceOptions,
  ) {
    this.line = new IdleLine(store);
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
    if (taken !== 'idle') return taken;
    onIdle();
    await this.waitForWork();
    return [];
  }

  /**
   * Claims up to `max` jobs without waiting: 'idle' when nothing is
   * claimable, [] when every candidate was taken by someone else first.
   */
  async take(max: number): Promise<ClaimedJob[] | 'idle'> {
    const fresh = Date.now() - this.viewAt <= VIEW_MAX_AGE_MS;
    // A fresh scan that saw the whole head, all of it taken since: scanning again would find nothing
    // that the first idle worker, who watches the head, does not see too.
    const drained = this.view.length === 0 && this.sawWholeHead && fresh;
    if ((this.view.length === 0 || !fresh) && !drained) await this.rescan(max);
    if (this.view.length === 0) return 'idle';
    const picked = this.pick(max);
    const result = await claimJobs(this.store, picked, {
      workerId: this.o.workerId,
      lockDuration: this.o.lockDuration,
    });
    for (const { candidate, error } of result.skipped) {
      if (error === undefined || error instanceof NodeExistsError) this.lastCollision = Date.now();
      else await this.setAside(candidate, error);
    }
    // Busy now: the next idle worker takes over the head, and sees only what is left.
    if (result.claimed.length > 0) this.line.leave();
    return result.claimed;
  }

  private async rescan(max: number): Promise<void> {
    const claims = await this.store.session.getChildren(this.store.layout.claimsDir);
    const exclude = new Set([...claims, ...this.inHand(), ...this.ignored]);
    const limit = Math.max(200, max * 4);
    this.view = await scanHead(this.store, { limit, exclude });
    this.sawWholeHead = this.view.length < limit;
    this.viewAt = Date.now();
  }

  private pick(max: number): Candidate[] {
    const spreading = Date.now() - this.lastCollision < SPREAD_FOR_MS;
    const offset = spreading ? Math.floor(Math.random() * Math.max(1, this.view.length - max)) : 0;
    const picked = this.view.splice(offset, max);
    return picked;
  }

  /** A pointer whose record is not a zkq job: failed with the reason when possible, else ignored. */
  private async setAside(candidate: Candidate, error: unknown): Promise<void> {
    this.o.onWarning(error instanceof Error ? error : new Error(String(error)));
    if (!(error instanceof MalformedJobError) || !(await quarantineMalformed(this.store, candidate, error))) {
      this.ignored.add(candidate.id);
    }
  }

  /** One stable watcher: re-arming it on every idle wait registers nothing twice. */
  private readonly onChange = (): void => this.poke();
  private readonly onLineMoved = (): void => this.lineMoved?.();

  /**
   * Waits for a change at the head or in the claims (first in line), a poke,
   * or the idle poll (`pollMs`, default `idlePollMs`). Further back in line,
   * it waits for the predecessor to leave, and looks again, without
   * returning: a waiting worker reads nothing.
   */
  async waitForWork(pollMs = this.o.idlePollMs): Promise<void> {
    this.outOfLine = false;
    while ((await this.waitOnce(pollMs)) === 'line') {
      // moved up the line: look where we stand now
    }
    this.viewAt = 0;
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

  private waitOnce(pollMs: number): Promise<'wake' | 'line'> {
    if (this.poked) {
      this.poked = false;
      return Promise.resolve('wake');
    }
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (why: 'wake' | 'line') => {
        clearTimeout(timer);
        this.wake = undefined;
        this.lineMoved = undefined;
        resolve(why);
      };
      this.wake = () => done('wake');
      this.lineMoved = () => done('line');
      const later = (ms: number) => {
        clearTimeout(timer);
        timer = setTimeout(() => this.poke(), ms);
      };
      this.line
        .position(this.onLineMoved)
        .then(async (where) => {
          // told to leave while this look was joining: a node it made would hold up the line
          if (this.outOfLine) return this.line.leave();
          if (where === 'waiting' || !this.wake) return;
          later(pollMs);
          // Watch the wake-up node, then look once more: what arrived before the watch is seen now.
          // Only new work rewrites it; claims and finishes (and a dead worker's claim vanishing,
          // which the idle poll finds) do not wake the first in line.
          await this.watchHead();
          // Active jobs keep their pointers at the head: leave the claimed ones out before the
          // limit, or a head full of running jobs would hide the waiting ones behind it.
          const claims = await this.store.session.getChildren(this.store.layout.claimsDir);
          const exclude = new Set([...claims, ...this.inHand(), ...this.ignored]);
          if ((await scanHead(this.store, { limit: 1, exclude })).length > 0) this.poke();
        })
        .catch(() => {
          if (this.wake) later(LINE_RETRY_MS); // a failed look (connection loss, closing): look again soon
        });
    });
  }
}
