/**
 * HeadView: a worker's short local view of the head of the queue, from which
 * the JobSource picks the candidates of its claims (one scan serves many
 * claims). Workers that collide on the same jobs start taking them from a
 * random offset within the head, so they spread instead of racing for the
 * single smallest node; a lone worker always takes the head in order.
 *
 * It also remembers the pointers a claim found without their record, so an
 * idle look drops them instead of taking them for work (and a later scan
 * leaves them out of the candidates), and the foreign nodes the worker
 * leaves alone.
 */
import type { Candidate } from '../protocol/claim.js';
import { dropOrphanPointer, lookAtHead } from '../protocol/head.js';
import type { QueueStore } from '../store.js';

/** A view of the head older than this is scanned again (bounds priority inversion). */
const VIEW_MAX_AGE_MS = 100;
/** How long after a collision claims keep spreading, ms. */
const SPREAD_FOR_MS = 2000;
/** Candidates a view holds at least while claims spread. */
const SPREAD_VIEW = 1000;
/** Pointers read without their record this worker remembers (the newest). */
const ORPHANS_KEPT = 1000;
/** Pointers without a record an idle look drops before it counts what it sees as work. */
const ORPHAN_DROPS = 10;

export class HeadView {
  private view: Candidate[] = [];
  /** When the view was listed, on the monotonic clock (a faked or stepped Date moves it not). */
  private viewAt = Number.NEGATIVE_INFINITY;
  /** The last scan returned less than it asked for: it saw every claimable job. */
  private sawWholeHead = false;
  /** The listings the last scan made: the next one reads them ahead, with the claims. */
  private ahead: readonly string[] = [];
  private lastCollision = Number.NEGATIVE_INFINITY;
  /** Ids of foreign pointers this worker leaves alone. */
  private readonly ignored = new Set<string>();
  /** Ready pointers whose record a claim found gone: the idle look drops them, not counts them as work. */
  private readonly orphans = new Map<string, number | undefined>();

  constructor(
    private readonly store: QueueStore,
    /** Ids of the jobs this worker is running now. */
    private readonly inHand: () => Iterable<string>,
  ) {}

  /** Up to `max` candidates from the view of the head (scanned again when stale), or 'idle'. */
  async candidates(max: number): Promise<Candidate[] | 'idle'> {
    const fresh = performance.now() - this.viewAt <= VIEW_MAX_AGE_MS;
    // A fresh scan that saw the whole head, all of it taken since: scanning again would find nothing
    // that the first idle worker, who watches the head, does not see too.
    const drained = this.view.length === 0 && this.sawWholeHead && fresh;
    if ((this.view.length === 0 || !fresh) && !drained) await this.rescan(max);
    if (this.view.length === 0) return 'idle';
    return this.pick(max);
  }

  /** Candidates a claim left (held back, or paused as it went): still there to take later. */
  putBack(left: Candidate[]): void {
    this.view.unshift(...left);
  }

  /** Another worker was first: the view is behind the claims, the next take scans again (and spreads). */
  collided(): void {
    this.lastCollision = performance.now();
    this.viewAt = Number.NEGATIVE_INFINITY;
  }

  /** The next take scans the head again. */
  outdate(): void {
    this.viewAt = Number.NEGATIVE_INFINITY;
  }

  /** Leaves a foreign pointer's job alone from now on. */
  ignore(id: string): void {
    this.ignored.add(id);
  }

  noteOrphan(pointer: string, recordVersion: number | undefined): void {
    this.orphans.set(pointer, recordVersion);
    if (this.orphans.size > ORPHANS_KEPT) this.orphans.delete(this.orphans.keys().next().value as string);
  }

  /**
   * Whether the head holds claimable work. A pointer a claim found without
   * its record, or beside a record no ready pointer goes with, is not work:
   * it is dropped (only while that still holds),
   * else the idle wait would end at once, again and again, while it stays.
   */
  async workAtHead(): Promise<boolean> {
    for (let i = 0; i < ORPHAN_DROPS; i++) {
      const [c] = await this.lookAtHead(1);
      if (!c) return false;
      if (!this.orphans.has(c.pointer)) return true;
      const recordVersion = this.orphans.get(c.pointer);
      this.orphans.delete(c.pointer);
      if ((await dropOrphanPointer(this.store, c, recordVersion)) === 'job') return true;
    }
    return true; // more of them: a take reads them (and notes them) first
  }

  private async rescan(max: number): Promise<void> {
    // spreading, the view reaches further into the head (its bucket is listed whole anyway),
    // so that workers picking windows at random rarely pick the same ones
    const limit = this.spreading() ? Math.max(SPREAD_VIEW, max * 16) : Math.max(200, max * 4);
    const listed = await this.lookAtHead(limit);
    this.sawWholeHead = listed.length < limit;
    // A pointer a claim found without its record is no candidate when a later scan lists it again (a
    // view older than its age, as a loaded machine's round trips make it): claiming it once more would
    // only skip it again, and the take would read as a race lost, not idle, for as long as it stays.
    // The idle look drops it (or finds a record there again, and forgets it).
    this.view = listed.filter((c) => !this.orphans.has(c.pointer));
    this.viewAt = performance.now();
  }

  /**
   * Up to `limit` candidates. Active jobs keep their pointers at the head: the
   * claimed ones are left out before the limit, or a head full of running
   * jobs would hide the waiting ones behind it.
   */
  private async lookAtHead(limit: number): Promise<Candidate[]> {
    const exclude = [...this.inHand(), ...this.ignored];
    const look = await lookAtHead(this.store, { limit, exclude, ahead: this.ahead });
    this.ahead = look.listed;
    return look.candidates;
  }

  private pick(max: number): Candidate[] {
    let offset = 0;
    if (this.spreading()) {
      // a random window, inside the first lane of the view: spreading never serves a lower priority first
      const lane = this.view[0]?.lane;
      let end = this.view.findIndex((c) => c.lane !== lane);
      if (end < 0) end = this.view.length;
      offset = Math.floor(Math.random() * Math.max(1, end - max));
    }
    const picked = this.view.splice(offset, max);
    return picked;
  }

  /** Claims collided lately: workers take windows at random offsets of the head, not its first jobs. */
  private spreading(): boolean {
    return performance.now() - this.lastCollision < SPREAD_FOR_MS;
  }
}
