/**
 * IdleLine: idle workers wait in line, so that a new job wakes one of them,
 * not all of them (no herd at the head of the queue).
 *
 * An idle worker holds an EPHEMERAL_SEQUENTIAL node under `idle/`. The first
 * in line watches the head of the queue (its listings and the claims); every
 * other one watches its predecessor and its predecessor's predecessor, with
 * data watches (none is left on a node that is already gone). A worker leaves
 * the line once it has claimed
 * work, or pauses, or closes: the next one then becomes the first and sees
 * only what is still unclaimed. A session lost takes the node with it; the
 * next look at the line joins it again, at the end. Node names start with
 * the session id, so that a node this session left behind (a reply lost) is
 * found and removed instead of holding up the line.
 *
 * The first one may be alive and unable to act (its link partitioned, its
 * process stopped, or killed with its session not yet expired) for as long
 * as its session lasts: the one right behind it (`next`) also looks at the
 * head at the idle poll. Whichever of the first two leaves, the one that
 * comes to stand right behind the first watched it (as its predecessor or
 * its predecessor's predecessor): it is told, and looks at the head at once.
 * So the first two places are always known to their holders, and the
 * workers further back (`waiting`) need not poll for them.
 *
 * The first two may be cut off together (one host partitioned, or one
 * process holding many of the first places stopped or killed): nobody is
 * told, the line does not move. Every worker further back reads the line
 * and the wake-up node `head` in its Backstop's read (one read-only multi
 * per session, about every third of the session timeout, in place of the
 * session's own probe; see backstop.ts): when the first in line is the same
 * at two reads in a row and work was announced (`head` rewritten) between
 * them, or at the first read after the line last changed (`idle`'s pzxid),
 * the first did not take it: it looks at the head (`frontStuck`). So a first
 * one that cannot act holds the line up for about an idle poll when the one
 * behind it can, and work announced while the whole front cannot act waits
 * at most two Backstop periods (BACKSTOP_MAX_MS each). Not covered until the
 * front's sessions end: a job whose claim a dead worker held, which becomes
 * claimable unannounced (no `head` write). Idle, the line costs the polls of
 * its first two workers, whatever its length. Connection events are the
 * caller's to react to (see JobSource): a look after any reconnection
 * re-arms whatever watch the connection may have lost.
 */

import { NoNodeError } from '../../zk/errors.js';
import type { ReadOp, ReadResult } from '../../zk/multi-size.js';
import { sortBySequence } from '../../zk/sequence.js';
import type { Watcher } from '../../zk/types.js';
import { idleNodePath, idleNodePrefix, joinIdleLine, leaveIdleLine } from '../protocol/idle-line.js';
import type { QueueStore } from '../store.js';

export class IdleLine {
  private node: Promise<string> | undefined;
  /** This worker's node name, once its join is known to have worked. */
  private mine: string | undefined;
  /** The paths of the two ahead of it it watches since its last look. */
  private ahead: { predecessor?: string; second?: string } = {};
  /** Where the last look found it. */
  private place: 'head' | 'next' | 'waiting' | undefined;
  /** Where a departure seen since puts it, known without a read (see onAhead). */
  private movedUp: 'head' | 'next' | undefined;
  /** The caller's watch, told of every move seen. */
  private told: Watcher | undefined;
  /** The first in line and `head`'s mzxid at the last Backstop read, and whether work was announced after the line last changed. */
  private front: { first: string; head: number | undefined; unseen: boolean } | undefined;
  /** The `head` mzxid this worker last looked at the head for. */
  private lookedFor: number | undefined;

  constructor(private readonly store: QueueStore) {}

  /**
   * Joins the line if needed and tells where this worker stands: `head`, or
   * `next` (right behind the head) or `waiting`, with `watch` armed on its
   * predecessor and its predecessor's predecessor (it fires when one of them
   * leaves, or the session is lost).
   */
  async position(watch: Watcher): Promise<'head' | 'next' | 'waiting'> {
    this.told = watch;
    if (this.movedUp) {
      this.place = this.movedUp;
      this.movedUp = undefined;
      return this.place;
    }
    this.place = await this.look();
    return this.place;
  }

  private async look(): Promise<'head' | 'next' | 'waiting'> {
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
      if (this.mine !== mine) this.front = undefined;
      this.mine = mine;
      this.ahead = {};
      if (at === 0) return 'head';
      try {
        const predecessor = idleNodePath(this.store, names[at - 1] as string);
        const second = at >= 2 ? idleNodePath(this.store, names[at - 2] as string) : undefined;
        this.ahead = { predecessor, second };
        await session.getData(predecessor, { watch: this.onAhead });
        if (second !== undefined) await session.getData(second, { watch: this.onAhead });
        return at === 1 ? 'next' : 'waiting';
      } catch (err) {
        if (!(err instanceof NoNodeError)) throw err; // the predecessor left meanwhile: look again
      }
    }
  }

  /**
   * One stable watcher on the two ahead (so re-arming registers nothing
   * twice): tells the caller, and notes where a departure puts this worker
   * when that is known without a read. Right behind the first, its
   * predecessor leaving makes it the first. Further back, the one before its
   * predecessor leaving mostly means the first left (the one that leaves an
   * idle line is mostly its first, to work): it stands right behind the
   * first now, its predecessor still watched. Taken so without a read: if
   * one further ahead left instead, it polls the head as the one right
   * behind the first does, until its poll's look at the line puts it back.
   */
  private readonly onAhead: Watcher = (event) => {
    const { predecessor, second } = this.ahead;
    const deleted = event.type === 'deleted';
    if (event.path === predecessor) {
      this.movedUp = deleted && this.place === 'next' && !second ? 'head' : undefined;
      this.ahead = {};
    } else if (event.path === second) {
      this.movedUp = deleted ? 'next' : undefined;
      this.ahead = this.movedUp ? { predecessor } : {};
    }
    this.told?.(event);
  };

  /** What a worker further back reads at its Backstop's read: the line and the wake-up node. */
  backstopReads(): ReadOp[] {
    const { idleDir, head } = this.store.layout;
    return [
      { op: 'getChildren', path: idleDir },
      { op: 'getData', path: idleDir },
      { op: 'getData', path: head },
    ];
  }

  /**
   * Judges a Backstop read (see the header): 'line' when this worker no
   * longer stands further back (its watches missed a move: look at the line
   * again), 'head' when the front may be cut off with work waiting (look at
   * the head), undefined when nothing is to be done.
   */
  frontStuck([line, dir, head]: ReadResult[]): 'line' | 'head' | undefined {
    if (!line?.ok || !('children' in line)) return undefined;
    const names = sortBySequence(line.children);
    const at = this.mine === undefined ? -1 : names.indexOf(this.mine);
    if (at < 2) return 'line';
    const first = names[0] as string;
    const written = head?.ok && 'stat' in head ? head.stat.mzxid : undefined;
    const changed = dir?.ok && 'stat' in dir ? dir.stat.pzxid : undefined;
    const before = this.front;
    // work announced after the line last changed (so after its first came to be first)
    const unseen = written !== undefined && changed !== undefined && written > changed;
    this.front = { first, head: written, unseen };
    if (before?.first !== first) return undefined;
    // the same first a period later, and work announced meanwhile or before that it did not take
    // (looked at once: work that another worker took leaves the line as it was)
    if ((before.head === written && !before.unseen) || written === this.lookedFor) return undefined;
    this.lookedFor = written;
    return 'head';
  }

  /** Leaves the line (claimed work, paused, closing); a no-op when not in it. */
  leave(): void {
    const node = this.node;
    this.node = undefined;
    this.mine = undefined;
    this.front = undefined;
    this.movedUp = undefined;
    this.place = undefined;
    this.ahead = {};
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
