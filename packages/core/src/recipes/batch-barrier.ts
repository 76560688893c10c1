/**
 * BatchBarrier: a barrier that starts one batch of `size` members at a time,
 * under the same name for ever (a worker fleet's nightly start). Nobody
 * passes until `size` members of its batch have joined; then the batch
 * passes at once, and whoever joins after waits for the next batch of
 * `size`. No reset is needed between batches.
 *
 * Layout:
 *   <path>/member-<12 hex id>-<10-digit seq>   EPHEMERAL_SEQUENTIAL, one per member, data = id
 *   <path>/released                            PERSISTENT, data = the highest member sequence
 *                                              number released so far (decimal)
 * A member is released once its sequence number is at most `released`'s.
 * The members above it wait, in sequence order; the one whose count finds
 * `size` of them releases the first `size` by raising `released` to the
 * sequence number of the `size`-th, at the version it read (so two
 * completers cannot both release: the loser reads again). Every waiter
 * arms its watch with the read of `released` (a data watch, or an
 * exists-watch while it is missing), so a release wakes each waiter once
 * and none made after the read is missed. Members that die before their batch is
 * released do not count: their ephemeral nodes vanish with them. Members of
 * a released batch may stay (a running worker): they never count again.
 *
 * Suspended connection: waiting goes on; once passed nothing is held.
 * Session lost while waiting: the member's node is gone, so `enter()`
 * rejects with `SessionExpiredError`.
 *
 * `reset()` forgets which batches were released (it deletes `released`, and
 * the `start` node a plain `Barrier` leaves). Only for repairs: it is refused
 * (`BarrierInUseError`) while any member is present, since every member
 * present would count again.
 */
import { ClosedError, InvalidArgumentError } from '../errors.js';
import { BadVersionError, isOutcomeUnknown, NodeExistsError, NoNodeError, SessionExpiredError } from '../zk/errors.js';
import type { WatchEvent } from '../zk/types.js';
import { Barrier, MEMBER_PREFIX } from './barrier.js';
import { BarrierInUseError } from './errors.js';
import {
  createMemberNode,
  deleteIfExists,
  joinPath,
  type Reconnected,
  raceWait,
  sequenceOf,
  sortBySequence,
  type TurnOptions,
  throwIfAborted,
  turnOptions,
  type WaitOptions,
} from './internals.js';

const RELEASED_NODE = 'released';
const LEGACY_START_NODE = 'start';

/** A barrier at `path` that releases its members in batches of `size`. */
export class BatchBarrier extends Barrier {
  /**
   * Joins and waits until this member's batch (the next `size` members to
   * join, this one included) is complete. On timeout (`TimeoutError`) or
   * abort (`AbortedError`) this member's node is removed before rejecting,
   * so it does not count.
   */
  override async enter(options: WaitOptions = {}): Promise<void> {
    const turn = turnOptions(`barrier ${this.path}`, options, this.stats);
    if (this.node) throw new InvalidArgumentError(`already a member of barrier ${this.path}`);
    const data = this.id === undefined ? undefined : Buffer.from(this.id);
    const node = await createMemberNode(this.session, this.path, MEMBER_PREFIX, data);
    this.node = node;
    try {
      await this.waitForBatch(sequenceOf(node), turn);
    } catch (err) {
      await this.removeNode().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Forgets the batches released so far (see the module notes). Refused with
   * `BarrierInUseError` while any member is present (a waiter, or a member of
   * a released batch still running): they would all count again, and a
   * waiter pass with members of batches already released.
   */
  override async reset(): Promise<void> {
    const present = await this.members().catch((err: unknown) => {
      if (err instanceof NoNodeError) return [];
      throw err;
    });
    if (present.length > 0) throw new BarrierInUseError(this.path, present.length);
    await deleteIfExists(this.session, joinPath(this.path, RELEASED_NODE));
    await deleteIfExists(this.session, joinPath(this.path, LEGACY_START_NODE));
  }

  private async waitForBatch(own: number, turn: TurnOptions): Promise<void> {
    const releasedPath = joinPath(this.path, RELEASED_NODE);
    for (;;) {
      throwIfAborted(turn);
      let fire!: (event: WatchEvent | Reconnected) => void;
      const changed = new Promise<WatchEvent | Reconnected>((resolve) => {
        fire = resolve;
      });
      // the read arms the watch: a release after it wakes this member, none before it is missed
      const { through, version } = await this.readReleased(releasedPath, (event) => fire(event));
      if (own <= through) return;
      const waiting = (await this.members()).filter((name) => sequenceOf(name) > through);
      const last = sortBySequence(waiting)[this.size - 1];
      if (last !== undefined) {
        await this.release(releasedPath, sequenceOf(last), version);
        continue; // read again: released by this member or, having lost the race, by another
      }
      const event = await this.waitForChange(changed, (reconnected) => fire(reconnected), turn);
      if (event.type === 'sessionLost') throw new SessionExpiredError(this.node);
    }
  }

  /**
   * The highest member sequence number released so far (-1: none) and the
   * version to raise it at, arming `watch` for its next creation or change.
   */
  private async readReleased(
    path: string,
    watch: (event: WatchEvent) => void,
  ): Promise<{ through: number; version: number | undefined }> {
    for (;;) {
      try {
        const { data, stat } = await this.session.getData(path, { watch });
        const through = Number(data.toString());
        return { through: Number.isInteger(through) ? through : -1, version: stat.version };
      } catch (err) {
        if (!(err instanceof NoNodeError)) throw err;
      }
      // missing: watch for its creation (and read it, should it have come meanwhile)
      if (!(await this.session.exists(path, { watch }))) return { through: -1, version: undefined };
    }
  }

  /** Waits for the watch, a reconnection (look again) or the deadline; rejects when the session closes. */
  private async waitForChange(
    changed: Promise<WatchEvent | Reconnected>,
    fire: (event: Reconnected) => void,
    turn: TurnOptions,
  ): Promise<WatchEvent | Reconnected> {
    let closed!: (err: Error) => void;
    const onClosed = () => closed(new ClosedError(`session of ${turn.what}`));
    const onReconnected = () => fire({ type: 'reconnected', path: this.path });
    const either = Promise.race([
      changed,
      new Promise<never>((_, reject) => {
        closed = reject;
      }),
    ]);
    if (turn.stats) turn.stats.watches++;
    this.session.once('closed', onClosed);
    this.session.on('reconnected', onReconnected);
    try {
      const event = await raceWait(either, turn);
      if (turn.stats) turn.stats.wakeups++;
      return event;
    } finally {
      this.session.off('closed', onClosed);
      this.session.off('reconnected', onReconnected);
    }
  }

  /** Raises `released` to `through` at `version` (creates it when none); losing a race, or not knowing, is fine. */
  private async release(path: string, through: number, version: number | undefined): Promise<void> {
    const data = Buffer.from(String(through));
    try {
      if (version === undefined) await this.session.create(path, data);
      else await this.session.setData(path, data, version);
    } catch (err) {
      // another completer came first, or the outcome is unknown: the next read tells
      if (!(err instanceof NodeExistsError) && !(err instanceof BadVersionError) && !isOutcomeUnknown(err)) throw err;
    }
  }
}
