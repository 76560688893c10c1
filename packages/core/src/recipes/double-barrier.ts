/**
 * DoubleBarrier: a barrier at both ends of a computation. `enter()` waits
 * until `size` members have joined (exactly as `Barrier`); `leave()` waits
 * until every member has left.
 *
 * Layout: as `Barrier` (`member-…` EPHEMERAL_SEQUENTIAL nodes and `start`).
 *
 * Leaving, without a herd (the classic double-barrier recipe):
 * - the lowest member waits, watching the highest remaining member, and
 *   looks again each time that one goes;
 * - every other member deletes its node and watches the lowest;
 * - when the lowest is alone it deletes `start` (resetting the barrier for
 *   the next round) and then its own node, which releases everyone.
 * A member's departure thus wakes only the lowest member, and the lowest's
 * departure wakes the rest once.
 *
 * Suspended connection: waiting goes on. Session lost: this member's node is
 * gone (it has left, as far as the others can tell); a pending `enter()` or
 * `leave()` rejects with `SessionExpiredError`. A `leave()` that times out or
 * is aborted keeps this member's node if it still has one: call `leave()`
 * again to finish leaving.
 */
import { SessionExpiredError } from '../zk/errors.js';
import { Barrier } from './barrier.js';
import {
  baseName,
  deleteEphemeral,
  joinPath,
  type TurnOptions,
  throwIfAborted,
  turnOptions,
  type WaitOptions,
  watchOnce,
} from './internals.js';

/** A double barrier at `path` for `size` members. */
export class DoubleBarrier extends Barrier {
  /**
   * Leaves, then waits until every member has left. Rejects with
   * `TimeoutError` or `AbortedError` (see the module notes) or
   * `SessionExpiredError`.
   */
  override async leave(options: WaitOptions = {}): Promise<void> {
    const turn = turnOptions(`leaving barrier ${this.path}`, options, this.stats);
    const own = this.node ? baseName(this.node) : undefined;
    for (;;) {
      throwIfAborted(turn);
      const members = await this.members();
      if (members.length === 0) return;
      const lowest = members[0] as string;
      if (own === undefined || !members.includes(own)) {
        this.node = undefined;
        await this.waitForExit(lowest, turn);
      } else if (members.length === 1) {
        await this.reset();
        await this.removeNode();
        return;
      } else if (own === lowest) {
        await this.waitForExit(members[members.length - 1] as string, turn);
      } else {
        await deleteEphemeral(this.session, joinPath(this.path, own));
        this.node = undefined;
        await this.waitForExit(lowest, turn);
      }
    }
  }

  private async waitForExit(name: string, turn: TurnOptions): Promise<void> {
    const event = await watchOnce(this.session, joinPath(this.path, name), turn, 'absent');
    if (event?.type === 'sessionLost') throw new SessionExpiredError(this.path);
  }
}
