/**
 * Lock: a distributed mutex (the ZooKeeper lock recipe, as in kazoo and Curator).
 *
 * Layout:
 *   <path>/lock-<12 hex id>-<10-digit seq>   EPHEMERAL_SEQUENTIAL, one per contender,
 *                                            data = the contender's id
 * The node with the lowest sequence number holds the lock; every other
 * contender watches only its immediate predecessor (a data watch, which a
 * predecessor already gone does not take), so a release wakes exactly one
 * waiter. Names are protected: a create retried after a connection loss
 * finds its own node instead of making a second one.
 *
 * Suspended connection: the holder can no longer be sure it holds the lock
 * (its session may expire any moment, and then another contender takes it).
 * From the moment of suspension `isHeld` is false and `suspended` is
 * emitted: a holder must stop acting on the lock at once (finish or abandon
 * the work it guards; nothing it writes is protected by the lock any more).
 * The session layer suspends at least a third of a session timeout before
 * the server can expire the session, even when the link dies silently, so
 * that is the time a holder has to stop. If the same session comes back,
 * `reconnected` is emitted and `isHeld` is true again: the node was never
 * gone, nobody else held the lock meanwhile.
 * Session lost: the node is gone with the session; `lost` is emitted and
 * `isHeld` stays false; a pending `acquire` rejects with
 * `SessionExpiredError`, also when a read retried on the new session still
 * lists the old node, at the head of the line or behind another (the server
 * keeps a session the client gave up until it expires it), and that node is
 * deleted. Maturity: tested against a real server, silent
 * partitions included.
 */
import { EventEmitter } from 'node:events';
import { InvalidArgumentError } from '../errors.js';
import { NoNodeError, SessionExpiredError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import {
  baseName,
  checkId,
  checkPath,
  createMemberNode,
  deleteEphemeral,
  exclusiveDriver,
  type LockDriver,
  sortBySequence,
  turnOptions,
  type WaitOptions,
  type WaitStats,
  waitForTurn,
} from './internals.js';

/** Options of a `Lock`. */
export interface LockOptions {
  /** Who holds the lock, stored as the node's data (for humans and `Lock.holder()`). */
  id?: string;
}

/** Typed events of a `Lock`. */
export interface LockEvents {
  /** The lock was acquired. */
  acquired: [];
  /**
   * The connection dropped while holding: the lock may be given to another
   * a third of a session timeout from now; stop acting on it (`isHeld` is false).
   */
  suspended: [];
  /** The same session came back: the lock is still held (`isHeld` is true again). */
  reconnected: [];
  /** The session was lost: the lock is no longer held. */
  lost: [];
}

/** Options of `Lock.acquire`. */
export type AcquireOptions = WaitOptions;

const DEFAULT_PREFIX = 'lock-';

/** A distributed mutual-exclusion lock under `path`. Not re-entrant. */
export class Lock extends EventEmitter<LockEvents> {
  /** Counters for tests and diagnostics: watches set and watch wakeups while waiting. */
  readonly stats: WaitStats = { watches: 0, wakeups: 0 };
  readonly path: string;
  readonly id: string | undefined;
  private node: string | undefined;
  private held = false;
  private busy = false;
  private detach: (() => void) | undefined;

  /**
   * @param session the session to use.
   * @param path the lock's parent node (created when missing).
   * @param options `id` stored in the lock node.
   * @param driver which node a waiter watches; `ReadWriteLock` passes its own. Default: exclusive.
   * @param prefix name prefix of the lock nodes. Default `lock-`.
   */
  constructor(
    private readonly session: Session,
    path: string,
    options: LockOptions = {},
    private readonly driver: LockDriver = exclusiveDriver,
    private readonly prefix: string = DEFAULT_PREFIX,
  ) {
    super();
    this.path = checkPath(path);
    this.id = options.id === undefined ? undefined : checkId(options.id, 'options.id');
  }

  /**
   * True while this lock is held and the connection is up and sure
   * (`Session.isConnected`): false from the moment the session is suspended,
   * or the heartbeat's deadline passed unanswered (a process blocked past it
   * included); true again if the same session comes back; false for good
   * once it is lost.
   */
  get isHeld(): boolean {
    return this.held && this.session.isConnected;
  }

  /** The path of this contender's node, while it has one. */
  get nodePath(): string | undefined {
    return this.node;
  }

  /**
   * Waits until the lock is held. On timeout (`TimeoutError`) or abort
   * (`AbortedError`) the contender's node is removed before rejecting.
   */
  async acquire(options: AcquireOptions = {}): Promise<void> {
    const turn = turnOptions(`lock ${this.path}`, options, this.stats);
    this.enter();
    let node: string | undefined;
    try {
      node = await this.createNode();
      const own = node;
      // a session lost meanwhile (onLost) takes this contender out of line, whatever a listing still shows
      await waitForTurn(this.session, this.path, baseName(own), this.driver, {
        ...turn,
        nodeLost: () => this.node !== own,
      });
      this.becomeHolder(node);
    } catch (err) {
      await this.abandon(node);
      throw err;
    } finally {
      this.busy = false;
    }
  }

  /** Takes the lock if it is free right now; resolves with whether it was taken. Never waits. */
  async tryAcquire(): Promise<boolean> {
    this.enter();
    let node: string | undefined;
    try {
      node = await this.createNode();
      const names = (await this.session.getChildren(this.path)).filter((n) => this.driver.participates(n));
      if (this.driver.decide(sortBySequence(names), baseName(node)).proceed) {
        this.becomeHolder(node);
        return true;
      }
      await this.abandon(node);
      return false;
    } catch (err) {
      await this.abandon(node);
      throw err;
    } finally {
      this.busy = false;
    }
  }

  /** Releases the lock (deletes the node). Does nothing when not held (also after `lost`). */
  async release(): Promise<void> {
    if (this.busy || (!this.held && !this.detach)) return;
    await this.abandon();
  }

  /** The id (node data) of the current holder, or undefined when the lock is free. */
  async holder(): Promise<string | undefined> {
    return currentHolder(this.session, this.path, this.driver);
  }

  private enter(): void {
    if (this.held || this.busy) {
      throw new InvalidArgumentError(`lock ${this.path} is already held or being acquired by this instance`);
    }
    this.busy = true;
  }

  private async createNode(): Promise<string> {
    const data = this.id === undefined ? undefined : Buffer.from(this.id);
    this.watchSession();
    this.node = await createMemberNode(this.session, this.path, this.prefix, data);
    return this.node;
  }

  /**
   * Holds the lock with `node`, unless the session was lost since it was made
   * (`SessionExpiredError`): a read retried on the new session may still list
   * the node of the session given up, which the server keeps until it expires
   * it, and then hands the lock to the next in line.
   */
  private becomeHolder(node: string): void {
    if (this.node !== node) throw new SessionExpiredError(node);
    this.held = true;
    this.emit('acquired');
  }

  /** Gives up the node (if any; one of a session lost included) and the session listeners. */
  private async abandon(node = this.node): Promise<void> {
    this.node = undefined;
    this.held = false;
    this.detach?.();
    this.detach = undefined;
    if (node) await deleteEphemeral(this.session, node).catch(() => undefined);
  }

  private watchSession(): void {
    const onSuspended = () => this.held && this.emit('suspended');
    const onReconnected = ({ newSession }: { newSession: boolean }) =>
      this.held && !newSession && this.emit('reconnected');
    const onLost = () => {
      this.node = undefined;
      if (!this.held) return;
      this.held = false;
      this.emit('lost');
    };
    this.session.on('suspended', onSuspended);
    this.session.on('reconnected', onReconnected);
    this.session.on('lost', onLost);
    this.detach = () => {
      this.session.off('suspended', onSuspended);
      this.session.off('reconnected', onReconnected);
      this.session.off('lost', onLost);
    };
  }
}

/** The data of the first node the driver lets through, or undefined when there is none. */
export async function currentHolder(session: Session, path: string, driver: LockDriver): Promise<string | undefined> {
  for (;;) {
    let names: string[];
    try {
      names = sortBySequence((await session.getChildren(path)).filter((n) => driver.participates(n)));
    } catch (err) {
      if (err instanceof NoNodeError) return undefined;
      throw err;
    }
    const first = names[0];
    if (first === undefined) return undefined;
    try {
      return (await session.getData(`${path}/${first}`)).data.toString();
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
  }
}
