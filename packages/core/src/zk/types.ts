/** Public types of the session layer. Nothing here exposes the wire client. */

/** How a node is created. */
export type CreateMode = 'persistent' | 'ephemeral' | 'persistent_sequential' | 'ephemeral_sequential';

/** A node's metadata. zxids are numbers: an epoch in the high 32 bits fits a double exactly. */
export interface Stat {
  czxid: number;
  mzxid: number;
  pzxid: number;
  /** Creation time, ms since the epoch. */
  ctime: number;
  /** Last modification time, ms since the epoch. */
  mtime: number;
  /** Data version: the fencing token of optimistic writes. */
  version: number;
  /** Children version. */
  cversion: number;
  aversion: number;
  /** Session id (hex) owning an ephemeral node, `'0'` for persistent nodes. */
  ephemeralOwner: string;
  dataLength: number;
  numChildren: number;
}

/** What a one-shot watch reports. `sessionLost` fires for every pending watch when the session expires. */
export interface WatchEvent {
  type: 'created' | 'deleted' | 'dataChanged' | 'childrenChanged' | 'sessionLost';
  /** Path inside the namespace. */
  path: string;
}

export type Watcher = (event: WatchEvent) => void;

/** One operation of an atomic `multi`. Versions default to -1 (any). */
export type Op =
  | { op: 'create'; path: string; data?: Buffer | undefined; mode?: CreateMode }
  | { op: 'delete'; path: string; version?: number }
  | { op: 'setData'; path: string; data: Buffer; version?: number }
  | { op: 'check'; path: string; version: number };

/** The result of one operation of a successful `multi`, in order. */
export type OpResult =
  | { op: 'create'; path: string }
  | { op: 'delete' }
  | { op: 'setData'; stat: Stat }
  | { op: 'check' };

/**
 * Connection states, after Curator's:
 * - `connected`: the first connection of a session is up;
 * - `suspended`: the connection dropped; the session may still be alive, so
 *   ephemeral nodes (locks, claims) may be gone any moment — stop acting on them;
 * - `reconnected`: connected again; `newSession` tells whether the old
 *   session survived (false) or a fresh one replaced an expired one (true);
 * - `lost`: the session expired: its ephemeral nodes and watches are gone;
 * - `closed`: closed by its owner, or after the server refused the session
 *   for good (the session's `failed` event says why).
 */
export type ConnectionState = 'connected' | 'suspended' | 'reconnected' | 'lost' | 'closed';

/** A permission set: any of `r` read, `w` write, `c` create, `d` delete, `a` admin. */
export interface AclEntry {
  perms: string;
  /**
   * `x509`: the subject of a client certificate (TLS with ZooKeeper's
   * X509AuthenticationProvider), e.g. `O=tenant-a,CN=worker`; `sasl`: a SASL
   * user name; `auth`: whatever identities the creating connection has.
   */
  scheme: 'world' | 'auth' | 'digest' | 'ip' | 'x509' | 'sasl';
  id: string;
}
