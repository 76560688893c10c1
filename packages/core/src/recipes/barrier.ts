/**
 * Barrier: a synchronizing barrier. Nobody passes `enter()` until `size`
 * members have joined; then all pass at once.
 *
 * Layout:
 *   <path>/member-<12 hex id>-<10-digit seq>   EPHEMERAL_SEQUENTIAL, one per member, data = id
 *   <path>/start                               PERSISTENT, created by the member whose join
 *                                              completes the set
 * Every member creates its node, counts the members, and creates `start` when
 * the count reaches `size` (`NodeExists` from a concurrent completer is
 * fine); everyone waits on `start` with an exists-watch. Members that die
 * before the start do not count: their ephemeral nodes vanish with them.
 *
 * Reuse: `start` stays after a round, so a barrier name passes everyone from
 * then on. To run another round under the same name, let every member
 * `leave()`, then call `reset()` once (it deletes `start`) before the next
 * round's members enter. (`DoubleBarrier` resets itself when the last member
 * leaves; `BatchBarrier` starts batch after batch with no reset.)
 *
 * Suspended connection: waiting goes on. Session lost while waiting: the
 * member's node is gone, so `enter()` rejects with `SessionExpiredError`;
 * so it does when a read retried on the new session still counts the node of
 * the session given up (the server keeps it until it expires that session),
 * and that node is deleted: waiting on, the member would wait with no node,
 * not counted once the server expired it.
 */
import { InvalidArgumentError } from '../errors.js';
import { NodeExistsError, SessionExpiredError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import {
  checkId,
  checkPath,
  createMemberNode,
  deleteEphemeral,
  deleteIfExists,
  joinPath,
  sortBySequence,
  type TurnOptions,
  turnOptions,
  type WaitOptions,
  type WaitStats,
  watchOnce,
} from './internals.js';

/** Options of a `Barrier`. */
export interface BarrierOptions {
  /** How many members must join before anyone passes (>= 1). */
  size: number;
  /** This member's id, stored in its node. */
  id?: string;
}

export const MEMBER_PREFIX = 'member-';
const START_NODE = 'start';

/** A synchronizing barrier at `path` for `size` members. */
export class Barrier {
  /** Counters for tests and diagnostics. */
  readonly stats: WaitStats = { watches: 0, wakeups: 0 };
  readonly path: string;
  readonly size: number;
  readonly id: string | undefined;
  /** This member's node while it is a member. */
  protected node: string | undefined;

  constructor(
    protected readonly session: Session,
    path: string,
    options: BarrierOptions,
  ) {
    this.path = checkPath(path);
    const size = options?.size;
    if (!Number.isInteger(size) || size < 1) {
      throw new InvalidArgumentError(`size must be an integer >= 1, got ${size}`, 'options.size');
    }
    this.size = size;
    this.id = options.id === undefined ? undefined : checkId(options.id, 'options.id');
  }

  /**
   * Joins and waits until `size` members have joined. On timeout
   * (`TimeoutError`) or abort (`AbortedError`) this member's node is removed
   * before rejecting, so it does not count.
   */
  async enter(options: WaitOptions = {}): Promise<void> {
    const turn = turnOptions(`barrier ${this.path}`, options, this.stats);
    if (this.node) throw new InvalidArgumentError(`already a member of barrier ${this.path}`);
    const data = this.id === undefined ? undefined : Buffer.from(this.id);
    this.node = await createMemberNode(this.session, this.path, MEMBER_PREFIX, data);
    // A read retried on a new session may still count the node of the session given up (the server
    // keeps it until it expires that session): waiting on, this member would wait with no node.
    let lost = false;
    const onLost = () => {
      lost = true;
    };
    this.session.on('lost', onLost);
    try {
      await this.waitForStart(turn, () => lost);
    } catch (err) {
      await this.removeNode().catch(() => undefined);
      throw err;
    } finally {
      this.session.off('lost', onLost);
    }
  }

  /** Removes this member's node (a member that leaves before the start no longer counts). */
  async leave(): Promise<void> {
    await this.removeNode();
  }

  protected async removeNode(): Promise<void> {
    const node = this.node;
    this.node = undefined;
    if (node) await deleteEphemeral(this.session, node);
  }

  /** Deletes the `start` node so that the barrier name can be used for another round. */
  async reset(): Promise<void> {
    await deleteIfExists(this.session, joinPath(this.path, START_NODE));
  }

  /** The member node names present now, sorted by sequence number. */
  async members(): Promise<string[]> {
    return sortBySequence(await this.session.getChildren(this.path), MEMBER_PREFIX);
  }

  /** Waits for `start` (or creates it); `SessionExpiredError` once `lost()`, unless `start` was seen first. */
  private async waitForStart(turn: TurnOptions, lost: () => boolean): Promise<void> {
    const start = joinPath(this.path, START_NODE);
    if (await this.session.exists(start)) return;
    const count = (await this.members()).length;
    if (lost()) throw new SessionExpiredError(this.node);
    if (count >= this.size) {
      await this.session.create(start).catch((err) => {
        if (!(err instanceof NodeExistsError)) throw err;
      });
      return;
    }
    for (;;) {
      if (lost()) throw new SessionExpiredError(this.node);
      const event = await watchOnce(this.session, start, turn, 'present');
      if (event?.type === 'sessionLost') throw new SessionExpiredError(this.node);
      if (event === undefined || event.type === 'created') return;
    }
  }
}
