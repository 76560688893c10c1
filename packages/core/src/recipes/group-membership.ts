/**
 * GroupMembership: a live list of the members of a group (kazoo's Party).
 *
 * Layout:
 *   <path>/<id>   EPHEMERAL, one per member, data = the member's data
 * Ids are node names, so one id is one member. `join()` creates the node;
 * `current` is a cached list of ids kept live by a child watch on `path`
 * (a `WatchLoop`: a failed re-read is retried until `leave()`, however long
 * the outage), and `change` is emitted whenever it changes.
 *
 * A create whose reply is lost is sent again; if it was given up (the link
 * down past the session's retries) `join()` rejects and deletes the node it
 * may have made. A `NodeExists` on join means the id is taken. When the
 * node belongs to an earlier session of this same object (the session layer declares a session
 * lost after a long suspension, possibly before the server has expired it),
 * `join()` waits for the old node to go and creates it again; any other
 * owner is a different live member: `MemberExistsError`. So is another
 * object of the same session that joined with this id and has not left (the
 * server sees one owner for both).
 *
 * Suspended connection: the cache is kept (it may be stale until the
 * reconnect). Session lost: the member's node is gone; once the session layer
 * has built a new session, the member re-joins and the cache is re-read. A
 * `leave()` while that re-join is under way wins: a node its create makes
 * after the leave is deleted, not left as a member nobody is.
 */
import { EventEmitter } from 'node:events';
import { BadVersionError, NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import { WatchLoop } from '../zk/watch-loop.js';
import { MemberExistsError } from './errors.js';
import { checkId, checkPath, joinPath, retryInBackground, watchOnce } from './internals.js';

/** Options of a `GroupMembership`. */
export interface GroupMembershipOptions {
  /** This member's id: the name of its node (no `/`). */
  id: string;
  /** Data stored in the member's node. */
  data?: Buffer;
}

/** A member of the group. */
export interface Member {
  id: string;
  data: Buffer;
}

/** Typed events of a `GroupMembership`. */
export interface GroupMembershipEvents {
  /** The member list changed; ids sorted. */
  change: [members: string[]];
  /** Refreshing the list or re-joining failed; it is retried. */
  refreshFailed: [error: unknown];
}

/** Membership of this process in the group at `path`, and a live view of the group. */
export class GroupMembership extends EventEmitter<GroupMembershipEvents> {
  readonly path: string;
  readonly id: string;
  private readonly data: Buffer | undefined;
  private cache: string[] = [];
  private joined = false;
  private list: WatchLoop<string[]> | undefined;
  /** Session ids (as bigint) under which this object created (or sent a create of) its node. */
  private readonly ownSessions = new Set<bigint>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly session: Session,
    path: string,
    options: GroupMembershipOptions,
  ) {
    super();
    this.path = checkPath(path);
    this.id = checkId(options?.id, 'options.id', true);
    this.data = options.data;
  }

  /** The member ids as last seen (sorted), kept live after `join()`. */
  get current(): readonly string[] {
    return this.cache;
  }

  /** Joins the group and starts following its member list. */
  async join(): Promise<void> {
    if (this.joined) return;
    const holders = holdersOn(this.session);
    const holder = holders.get(this.nodePath);
    if (holder && holder !== this) throw new MemberExistsError(this.nodePath);
    holders.set(this.nodePath, this);
    this.joined = true;
    this.subscribe();
    const list = new WatchLoop(this.session, {
      read: (watch) => this.session.getChildren(this.path, { watch }),
      onRead: (ids) => this.update(ids),
      onError: (err) => this.emit('refreshFailed', err),
    });
    this.list = list;
    let created = false;
    try {
      created = await this.createNode();
      if (!created) return; // left before the node was made
      await list.start();
    } catch (err) {
      // A create given up may have been applied (its reply lost): that node is ours and goes. One
      // that is not ours (MemberExistsError) stays: leave() deletes only a node this object made.
      await this.leave().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Leaves the group (deletes the member node, if this object made it: never
   * the node of another member of the same id) and stops following it.
   * Idempotent; `join()` again is fine.
   */
  async leave(): Promise<void> {
    this.stopFollowing();
    try {
      await this.deleteNode();
    } finally {
      // the id is free for another object of this session once the node is gone (or given up)
      const holders = holdersOn(this.session);
      if (!this.joined && holders.get(this.nodePath) === this) holders.delete(this.nodePath);
    }
  }

  /** The current members with their data, read from ZooKeeper now. */
  async members(): Promise<Member[]> {
    const ids = await this.session.getChildren(this.path).catch(emptyOnNoNode);
    const read = await Promise.all(
      ids.sort().map(async (id) => {
        const data = await this.session.getData(joinPath(this.path, id)).then((r) => r.data, nullOnNoNode);
        return data ? { id, data } : undefined;
      }),
    );
    return read.filter((m): m is Member => m !== undefined);
  }

  private stopFollowing(): void {
    this.joined = false;
    this.list?.close();
    this.list = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Deletes the member's node if this object made it (on this session or an earlier one), never another's. */
  private async deleteNode(): Promise<void> {
    await this.session.retry(async () => {
      const stat = await this.session.exists(this.nodePath);
      if (!stat || !this.ownSessions.has(BigInt(`0x${stat.ephemeralOwner}`))) return;
      await this.session.delete(this.nodePath, stat.version).catch((err) => {
        if (!(err instanceof NoNodeError) && !(err instanceof BadVersionError)) throw err;
      });
    });
  }

  private get nodePath(): string {
    return joinPath(this.path, this.id);
  }

  private subscribe(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.session.onNewSession(() => {
      if (this.joined) void this.recover();
    });
  }

  private recover(): Promise<void> {
    return retryInBackground(
      this.session,
      () => this.joined,
      async () => void (await this.createNode()),
      (err) => this.emit('refreshFailed', err),
    );
  }

  /**
   * Creates this member's node; false when the member left meanwhile. A
   * re-join on a new session can be under way when `leave()` is called: its
   * create, landing after the leave's delete, would leave a member nobody is
   * for as long as the session lives, so a node made after a leave is removed.
   */
  private async createNode(): Promise<boolean> {
    await this.session.ensurePath(this.path);
    for (;;) {
      if (!this.joined) return false;
      try {
        // Sent again on connection loss: a create applied whose reply was lost answers NodeExists
        // the next time, on a node of this session (ours). The session is noted before each
        // create: one applied whose reply is lost leaves a node that is ours to delete.
        await this.session.retry(() => {
          this.ownSessions.add(BigInt(`0x${this.session.sessionId}`));
          return this.session.create(this.nodePath, this.data, 'ephemeral');
        });
      } catch (err) {
        if (!(err instanceof NodeExistsError)) throw err;
        // An earlier session of ours still holds the node: wait for the server to expire it.
        if (!(await this.isOwnNode())) {
          await watchOnce(this.session, this.nodePath, { what: `member ${this.nodePath}` }, 'absent');
          continue;
        }
        // else made by a create of ours whose reply was lost, or a concurrent one
      }
      if (this.joined) return true;
      await this.deleteNode();
      return false;
    }
  }

  /** True when the existing node is this session's; throws when it belongs to a stranger. */
  private async isOwnNode(): Promise<boolean> {
    const stat = await this.session.exists(this.nodePath);
    if (!stat) return false;
    const owner = BigInt(`0x${stat.ephemeralOwner}`);
    if (owner === BigInt(`0x${this.session.sessionId}`)) return true;
    if (this.ownSessions.has(owner)) return false;
    throw new MemberExistsError(this.nodePath);
  }

  private update(ids: string[]): void {
    const sorted = [...ids].sort();
    if (sorted.join('/') === this.cache.join('/')) return;
    this.cache = sorted;
    this.emit('change', [...sorted]);
  }
}

/**
 * The object that joined as each member path, per session. The server tells
 * two objects of one session apart by nothing (the node's owner is the
 * session): a second object joining with an id the first holds would take the
 * first's node for its own, and its leave would delete it.
 */
const joinedOn = new WeakMap<Session, Map<string, GroupMembership>>();

function holdersOn(session: Session): Map<string, GroupMembership> {
  let holders = joinedOn.get(session);
  if (!holders) {
    holders = new Map();
    joinedOn.set(session, holders);
  }
  return holders;
}

function emptyOnNoNode(err: unknown): string[] {
  if (err instanceof NoNodeError) return [];
  throw err;
}

function nullOnNoNode(err: unknown): null {
  if (err instanceof NoNodeError) return null;
  throw err;
}
