/**
 * LeaderElection: one leader among the participants of `path`, the others
 * waiting in line (the ZooKeeper election recipe).
 *
 * Layout:
 *   <path>/n-<12 hex id>-<10-digit seq>   EPHEMERAL_SEQUENTIAL, one per participant,
 *                                         data = the participant's id
 * The lowest sequence number leads; every other participant watches only its
 * immediate predecessor, so a leader's departure wakes one participant.
 *
 * Fencing: the leader adds `fence()` (a `check` of its own node) to each of
 * its `multi`s. A deposed leader's node is gone, so its writes fail with
 * `NoNodeError` instead of racing the new leader.
 *
 * Suspended connection: the leader may be replaced a third of a session
 * timeout from now (the session layer suspends at least that long before
 * the server can expire the session, even when the link dies silently).
 * From the moment of suspension `isLeader` is false and `suspended` is
 * emitted (while leading): a leader must stop acting as one at once; the
 * fence keeps its writes safe meanwhile. If the same session comes back,
 * `reconnected` is emitted and `isLeader` is true again (its node never went,
 * nobody else led). Session lost: `deposed`
 * is emitted (if leading) and, once the session layer has built a new
 * session, the participant re-joins at the back of the line unless it has
 * resigned or closed, with one node: a deposition's leave still under way
 * when the session was lost does not join it a second time. A re-join that
 * fails is tried again, with a growing
 * pause, until it works or the participant leaves; each failure emits
 * `joinFailed` (and `error`, when someone listens for it). `resign()` leaves
 * the election; `start()` joins again.
 *
 * Leftovers: a leave whose delete failed, or a create whose outcome is
 * unknown, may leave a node of this participant in line for as long as its
 * session lives; a node joining behind it would wait for it forever, and so
 * would everyone after. After such a failure the next join first deletes the
 * nodes under `path` that this session owns and that hold this participant's
 * id (so an id must be one participant's per session).
 */
import { EventEmitter } from 'node:events';
import { AbortedError, ClosedError } from '../errors.js';
import { NoNodeError, SessionExpiredError } from '../zk/errors.js';
import { sortBySequence } from '../zk/sequence.js';
import type { Session } from '../zk/session.js';
import type { Op } from '../zk/types.js';
import { type ElectionTrace, traceElection, traceError } from './election-trace.js';
import { NotLeaderError } from './errors.js';
import {
  baseName,
  checkId,
  checkPath,
  createMemberNode,
  deleteEphemeral,
  deleteOwnNodes,
  exclusiveDriver,
  existsWithDataWatch,
  raceWait,
  type TurnStep,
  turnOptions,
  type WaitOptions,
  type WaitStats,
  waitForTurn,
} from './internals.js';
import { currentHolder } from './lock.js';

/** Options of a `LeaderElection`. */
export interface LeaderElectionOptions {
  /** This participant's id, stored in its node and returned by `leader()`. */
  id: string;
}

/** Typed events of a `LeaderElection`. */
export interface LeaderElectionEvents {
  /** This participant became the leader. */
  elected: [];
  /** This participant stopped being the leader (resigned, closed, or its session was lost). */
  deposed: [];
  /**
   * The connection dropped while leading: another may lead a third of a
   * session timeout from now; stop acting as the leader (`isLeader` is false).
   */
  suspended: [];
  /** The same session came back while leading: still the leader (`isLeader` is true again). */
  reconnected: [];
  /** Joining or waiting failed for a reason other than session loss; it is retried. */
  joinFailed: [error: unknown];
  /**
   * The same failures as `joinFailed`, emitted only while someone listens:
   * an `error` nobody listens to would end the process, and these are retried.
   */
  error: [error: Error];
}

const NODE_PREFIX = 'n-';
/** First pause before joining again after a failure; it doubles up to REJOIN_MAX_DELAY_MS. */
const REJOIN_DELAY_MS = 1000;
const REJOIN_MAX_DELAY_MS = 16_000;

/** A participant (or, without `start()`, an observer) of the election at `path`. */
export class LeaderElection extends EventEmitter<LeaderElectionEvents> {
  /** Counters for tests and diagnostics. */
  readonly stats: WaitStats = { watches: 0, wakeups: 0 };
  readonly path: string;
  readonly id: string;
  private node: string | undefined;
  private leading = false;
  private joined = false;
  private closed = false;
  /** Bumped on every join and leave; a campaign of an older epoch stops acting. */
  private epoch = 0;
  private abort: AbortController | undefined;
  private unsubscribe: (() => void) | undefined;
  /** A re-join loop is running (one at a time). */
  private rejoining = false;
  /**
   * Ends each pause before joining again under way (on leave or close). Two
   * can overlap (a failed campaign's, then a failed re-join's on a new
   * session): each ends at its own time.
   */
  private readonly pauses = new Set<() => void>();
  /** A delete or create of this participant's node failed: a node of it may be left in line. */
  private mayHaveLeftovers = false;

  constructor(
    private readonly session: Session,
    path: string,
    options: LeaderElectionOptions,
  ) {
    super();
    this.path = checkPath(path);
    this.id = checkId(options?.id, 'options.id');
  }

  /**
   * True while this participant leads and the connection is up and sure
   * (`Session.isConnected`): false from the moment the session is suspended,
   * or the heartbeat's deadline passed unanswered (a process blocked past it
   * included); true again if the same session comes back; false once deposed.
   */
  get isLeader(): boolean {
    return this.leading && this.session.isConnected;
  }

  /** Joins the election: resolves once this participant's node exists (not when it wins). */
  async start(): Promise<void> {
    if (this.closed) throw new ClosedError(`election ${this.path}`);
    if (this.joined) return;
    this.joined = true;
    this.subscribe();
    try {
      await this.join();
    } catch (err) {
      this.joined = false;
      throw err;
    }
  }

  /** Leaves the election (deleting this participant's node); `start()` joins again at the back. */
  async resign(): Promise<void> {
    this.joined = false;
    await this.leave();
  }

  /** Leaves for good: no automatic re-join, and `start()` throws `ClosedError`. */
  async close(): Promise<void> {
    this.closed = true;
    await this.resign();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** The id of the current leader, or undefined when nobody takes part. Works for observers too. */
  leader(): Promise<string | undefined> {
    return currentHolder(this.session, this.path, exclusiveDriver);
  }

  /**
   * This participant's place in line among `names`, a listing of the
   * election's path: 0 leads, 1 is next, and so on; undefined when its node
   * is not among them (not joined, or the listing is older than its node).
   * A place learnt so only ever shrinks while the node lives: the ones
   * ahead leave, newcomers join behind.
   */
  placeAmong(names: readonly string[]): number | undefined {
    const own = this.node === undefined ? undefined : baseName(this.node);
    if (own === undefined) return undefined;
    const at = sortBySequence(names.filter((n) => exclusiveDriver.participates(n))).indexOf(own);
    return at < 0 ? undefined : at;
  }

  /**
   * An op to add to the leader's `multi`s: it fails (`NoNodeError`) once this
   * participant's node is gone, so a deposed leader's write is rejected.
   * Throws `NotLeaderError` when not leading.
   */
  fence(): Op {
    if (!this.leading || !this.node) throw new NotLeaderError(this.path);
    return { op: 'check', path: this.node, version: 0 };
  }

  /** Resolves once this participant leads (`isLeader`); rejects with `TimeoutError` or `AbortedError`. */
  async waitUntilLeader(options: WaitOptions = {}): Promise<void> {
    const turn = turnOptions(`leadership of ${this.path}`, options);
    if (this.isLeader) return;
    let onElected!: () => void;
    const elected = new Promise<void>((resolve) => {
      onElected = () => this.isLeader && resolve();
    });
    this.on('elected', onElected);
    this.on('reconnected', onElected);
    try {
      await raceWait(elected, turn);
    } finally {
      this.off('elected', onElected);
      this.off('reconnected', onElected);
    }
  }

  private subscribe(): void {
    if (this.unsubscribe) return;
    const onLost = () => this.onSessionLost();
    const onSuspended = () => this.leading && this.emit('suspended');
    const onReconnected = ({ newSession }: { newSession: boolean }) =>
      this.leading && !newSession && this.emit('reconnected');
    this.session.on('lost', onLost);
    this.session.on('suspended', onSuspended);
    this.session.on('reconnected', onReconnected);
    const offHook = this.session.onNewSession(() => {
      if (this.joined && !this.closed) void this.rejoin();
    });
    this.unsubscribe = () => {
      this.session.off('lost', onLost);
      this.session.off('suspended', onSuspended);
      this.session.off('reconnected', onReconnected);
      offHook();
    };
  }

  /** Creates this participant's node and starts campaigning; false when a leave or a session loss came first. */
  private async join(): Promise<boolean> {
    const epoch = ++this.epoch;
    if (this.mayHaveLeftovers) {
      const removed = await deleteOwnNodes(this.session, this.path, NODE_PREFIX, this.id);
      for (const left of removed) this.trace('leftoverRemoved', left);
      this.mayHaveLeftovers = false;
    }
    let node: string;
    try {
      node = await createMemberNode(this.session, this.path, NODE_PREFIX, Buffer.from(this.id));
    } catch (err) {
      this.mayHaveLeftovers = true; // the create may have been applied, its reply lost
      throw err;
    }
    if (epoch !== this.epoch || !this.joined) {
      this.trace('abandoned', node);
      await this.deleteNode(node);
      return false;
    }
    this.node = node;
    this.trace('joined', node);
    void this.campaign(epoch, node);
    return true;
  }

  /**
   * Joins again until it works, this participant leaves or closes, or the
   * session closes. Each failure is reported and followed by a pause. A
   * participant already back in line stays as it is: a leave after a
   * deposition can end after a session loss and the re-join on the new
   * session, and joining once more would leave that node in line, owned by
   * a live session and by no campaign, ahead of this participant's own.
   */
  private async rejoin(): Promise<void> {
    if (this.rejoining) return;
    this.rejoining = true;
    try {
      let failures = 0;
      while (this.node === undefined && this.joined && !this.closed && !this.session.closed) {
        try {
          if (await this.join()) return;
        } catch (err) {
          if (!this.joined || this.closed || this.session.closed) return;
          this.reportFailure(err);
          await this.pause(Math.min(REJOIN_MAX_DELAY_MS, REJOIN_DELAY_MS * 2 ** Math.min(failures++, 10)));
        }
      }
    } finally {
      this.rejoining = false;
    }
  }

  private reportFailure(err: unknown): void {
    this.trace('joinFailed', this.node, { error: traceError(err) });
    this.emit('joinFailed', err);
    if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(String(err)));
  }

  /** Waits `ms`, or less when this participant leaves. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(timer);
        this.pauses.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      this.pauses.add(end);
    });
  }

  /** Waits for this participant's turn, then leads until deposed. */
  private async campaign(epoch: number, node: string): Promise<void> {
    const abort = new AbortController();
    this.abort = abort;
    try {
      const turn = {
        what: `election ${this.path}`,
        signal: abort.signal,
        stats: this.stats,
        onStep: (s: TurnStep) => this.trace(s.step, node, s.step === 'proceed' ? {} : s),
      };
      await waitForTurn(this.session, this.path, baseName(node), exclusiveDriver, turn);
      if (epoch !== this.epoch) return;
      this.leading = true;
      this.trace('elected', node);
      this.emit('elected');
      await this.watchOwnNode(epoch, node);
    } catch (err) {
      if (epoch === this.epoch) await this.campaignFailed(err, epoch);
    }
  }

  /**
   * While leading, notices the node being deleted from outside (an operator,
   * a cleanup). A data watch: if the node is already gone, none is left behind;
   * a write to the node fires it too, and it is set again.
   */
  private async watchOwnNode(epoch: number, node: string): Promise<void> {
    const present = await existsWithDataWatch(this.session, node, (event) => {
      if (epoch !== this.epoch) return;
      if (event.type === 'deleted') void this.campaignFailed(new NoNodeError(node), epoch);
      else if (event.type === 'dataChanged') {
        this.watchOwnNode(epoch, node).catch((err) =>
          epoch === this.epoch ? this.campaignFailed(err, epoch) : undefined,
        );
      }
    });
    if (!present && epoch === this.epoch) throw new NoNodeError(node);
  }

  /** Deposes, then re-joins at the back (after a pause unless the node was merely deleted). */
  private async campaignFailed(err: unknown, epoch: number): Promise<void> {
    if (err instanceof AbortedError || err instanceof SessionExpiredError || this.session.closed) return;
    this.trace('failed', this.node, { error: traceError(err) });
    this.depose();
    if (!(err instanceof NoNodeError)) {
      this.reportFailure(err);
      await this.pause(REJOIN_DELAY_MS);
    }
    if (epoch !== this.epoch || !this.joined || this.closed) return;
    await this.leave();
    if (!this.joined || this.closed) return;
    await this.rejoin();
  }

  private onSessionLost(): void {
    this.trace('sessionLost', this.node);
    this.epoch++;
    this.abort?.abort();
    this.node = undefined;
    this.depose();
  }

  private async leave(): Promise<void> {
    this.epoch++;
    this.abort?.abort();
    for (const end of [...this.pauses]) end();
    const node = this.node;
    this.node = undefined;
    this.depose();
    if (!node) return;
    this.trace('left', node);
    await this.deleteNode(node);
  }

  /** Deletes a node this participant created; on failure the next join looks for leftovers. */
  private async deleteNode(node: string): Promise<void> {
    await deleteEphemeral(this.session, node).catch((err) => {
      this.mayHaveLeftovers = true;
      this.trace('leftover', node, { error: traceError(err) });
    });
  }

  private trace(step: string, node: string | undefined, detail: Partial<ElectionTrace> = {}): void {
    traceElection(() => ({
      path: this.path,
      id: this.id,
      session: this.session.sessionId,
      step,
      node: node === undefined ? undefined : baseName(node),
      ...detail,
    }));
  }

  private depose(): void {
    if (!this.leading) return;
    this.leading = false;
    this.emit('deposed');
  }
}
