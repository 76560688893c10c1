/**
 * Conversions between node-zookeeper-client's objects and the session
 * layer's own types (modes, ACLs, stats, watch events, error codes).
 */
import zookeeper from 'node-zookeeper-client';
import { permissionBits } from '../acl.js';
import type { AclEntry, CreateMode, Stat, WatchEvent } from '../types.js';

export type WireClient = zookeeper.Client;
export const wire = zookeeper;

const MODES: Record<CreateMode, number> = {
  persistent: zookeeper.CreateMode.PERSISTENT,
  ephemeral: zookeeper.CreateMode.EPHEMERAL,
  persistent_sequential: zookeeper.CreateMode.PERSISTENT_SEQUENTIAL,
  ephemeral_sequential: zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
};

export function wireMode(mode: CreateMode): number {
  return MODES[mode];
}

export function wireAcl(entries: readonly AclEntry[]): zookeeper.ACL[] {
  return entries.map((e) => new zookeeper.ACL(permissionBits(e.perms), new zookeeper.Id(e.scheme, e.id)));
}

function long(buf: unknown): number {
  return Buffer.isBuffer(buf) && buf.length === 8 ? Number(buf.readBigInt64BE(0)) : Number(buf ?? 0);
}

export function toStat(s: zookeeper.Stat): Stat {
  const owner = s.ephemeralOwner as unknown as Buffer;
  return {
    czxid: long(s.czxid),
    mzxid: long(s.mzxid),
    pzxid: long(s.pzxid),
    ctime: long(s.ctime),
    mtime: long(s.mtime),
    version: s.version,
    cversion: s.cversion,
    aversion: s.aversion,
    ephemeralOwner: Buffer.isBuffer(owner) ? owner.readBigUInt64BE(0).toString(16) : '0',
    dataLength: s.dataLength,
    numChildren: s.numChildren,
  };
}

/**
 * Sets the version of the operation just added to `tx`. The wire client's
 * Transaction stores `version || -1`, so version 0 (a node never written
 * since its creation: the first fencing token) would silently mean "any
 * version" and a stale `check`, `setData` or `delete` in a multi would pass.
 */
export function exactVersion(tx: zookeeper.Transaction, version: number): void {
  const ops = (tx as unknown as { ops: { version?: number }[] }).ops;
  const last = ops[ops.length - 1];
  if (last) last.version = version;
}

const EVENT_TYPES: Record<number, WatchEvent['type']> = {
  [zookeeper.Event.NODE_CREATED]: 'created',
  [zookeeper.Event.NODE_DELETED]: 'deleted',
  [zookeeper.Event.NODE_DATA_CHANGED]: 'dataChanged',
  [zookeeper.Event.NODE_CHILDREN_CHANGED]: 'childrenChanged',
};

export function eventType(e: zookeeper.Event): WatchEvent['type'] {
  return EVENT_TYPES[e.getType()] ?? 'dataChanged';
}

/** The numeric code of an error the wire client reports (Exception or anything else). */
export function wireErrorCode(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'getCode' in err && typeof err.getCode === 'function') {
    return (err as zookeeper.Exception).getCode();
  }
  return undefined;
}

/** The wire client's Exception for `code`, as it reports a request's error. */
export const wireException = (code: number): unknown =>
  (zookeeper.Exception as unknown as { create(code: number): unknown }).create(code);
