/**
 * IdleLine: idle workers wait in line, so that a new job wakes one of them,
 * not all of them (no herd at the head of the queue).
 *
 * An idle worker holds an EPHEMERAL_SEQUENTIAL node under `idle/`. The first
 * in line watches the head of the queue (its listings and the claims); every
 * other one watches only its predecessor, with a data watch (none is left on
 * a node that is already gone). A worker leaves the line once it has claimed
 * work, or pauses, or closes: the next one then becomes the first and sees
 * only what is still unclaimed. A session lost takes the node with it; the
 * next look at the line joins it again, at the end. Node names start with
 * the session id, so that a node this session left behind (a reply lost) is
 * found and removed instead of holding up the line.
 *
 * The first one may be alive and unable to act (its link partitioned, its
 * process stopped, or killed with its session not yet expired) for as long
 * as its session lasts: the one right behind it (`next`) also looks at the
 * head at the idle poll. A worker watches only its predecessor, so when the
 * first one leaves, the one that comes to stand right behind the new first
 * is not told: every worker further back (`waiting`) reads the line again at
 * the idle poll, and one that finds itself `next` looks at the head at once;
 * one that finds the workers ahead of it unchanged for two polls (`stillFor`)
 * looks at the head too, as the first two may be cut off together. So no
 * worker that cannot act holds the line up for much longer than two idle
 * polls, wherever it stands. Connection events are the caller's to
 * react to (see JobSource): a look after any reconnection re-arms whatever
 * watch the connection may have lost.
 */

import { performance } from 'node:perf_hooks';
import { NoNodeError } from '../../zk/errors.js';
import { sortBySequence } from '../../zk/sequence.js';
import type { Watcher } from '../../zk/types.js';
import { idleNodePath, idleNodePrefix, joinIdleLine, leaveIdleLine } from '../protocol/idle-line.js';
import type { QueueStore } from '../store.js';

export class IdleLine {
  private node: Promise<string> | undefined;
  /** The nodes ahead of this worker's at the last read of the line, and since when (ms, monotonic). */
  private ahead = '';
  private aheadSince = 0;

  constructor(private readonly store: QueueStore) {}

  /**
   * Joins the line if needed and tells where this worker stands: `head`, or
   * `next` (right behind the head) or `waiting`, with `watch` armed on its
   * predecessor (it fires when that one leaves, or the session is lost).
   */
  async position(watch: Watcher): Promise<'head' | 'next' | 'waiting'> {
    const { session, layout } = this.store;
    for (;;) {
      const node = await this.join();
      const mine = node.slice(node.lastIndexOf('/') + 1);
      const names = sortBySequence(await this.store.children(layout.idleDir));
      this.removeStrays(names, mine);
      const at = names.indexOf(mine);
      if (at < 0) {
        this.node = undefined; // gone with an expired session: join again
        continue;
      }
      const ahead = names.slice(0, at).join('/');
      if (ahead !== this.ahead) {
        this.ahead = ahead;
        this.aheadSince = performance.now();
      }
      if (at === 0) return 'head';
      try {
        await session.getData(idleNodePath(this.store, names[at - 1] as string), { watch });
        return at === 1 ? 'next' : 'waiting';
      } catch (err) {
        if (!(err instanceof NoNodeError)) throw err; // the predecessor left meanwhile: look again
      }
    }
  }

  /** How long the workers ahead of this one have been the same ones, as of the last read of the line (ms). */
  stillFor(): number {
    return performance.now() - this.aheadSince;
  }

  /** Leaves the line (claimed work, paused, closing); a no-op when not in it. */
  leave(): void {
    const node = this.node;
    this.node = undefined;
    void node?.then((path) => leaveIdleLine(this.store, path)).catch(() => undefined);
  }

  /**
   * Nodes of this session other than the current one (a join or a leave
   * whose reply was lost) would hold up the line for as long as the session
   * lives: they are removed whenever the line is read.
   */
  private removeStrays(names: string[], mine: string): void {
    const own = idleNodePrefix(this.store);
    for (const name of names) {
      if (name !== mine && name.startsWith(own)) void leaveIdleLine(this.store, idleNodePath(this.store, name));
    }
  }

  private join(): Promise<string> {
    if (!this.node) {
      const joining = joinIdleLine(this.store);
      joining.catch(() => {
        if (this.node === joining) this.node = undefined;
      });
      this.node = joining;
    }
    return this.node;
  }
}
