/**
 * How big a `multi` or `readMulti` request (and a read's reply) may grow:
 * estimates checked before sending, under ZooKeeper's packet limit.
 */
import type { ZooKeeperError } from './errors.js';
import { PACKET_LIMIT_BYTES } from './limits.js';
import type { Op, Stat } from './types.js';

/** Most bytes of a `multi` request (estimated by `opBytes`): ZooKeeper's packet limit less a margin. */
export const MULTI_BYTE_LIMIT = PACKET_LIMIT_BYTES - 16 * 1024;
/** Bytes of a `multi` request besides its ops. */
export const MULTI_OVERHEAD_BYTES = 64;

/** The last namespace measured, and its bytes: a session counts the same one for every op. */
let measured = '';
let measuredBytes = 0;

/** An upper bound of the bytes one op adds to a `multi` request, its path under `namespace`. */
export function opBytes(op: Op, namespace = ''): number {
  return 64 + namespaceBytes(namespace) + Buffer.byteLength(op.path) + ('data' in op && op.data ? op.data.length : 0);
}

function namespaceBytes(namespace: string): number {
  if (namespace !== measured) {
    measured = namespace;
    measuredBytes = Buffer.byteLength(namespace);
  }
  return measuredBytes;
}

/** One read of a `readMulti`. */
export type ReadOp = { op: 'getData'; path: string } | { op: 'getChildren'; path: string };

/** The result of one read of a `readMulti`: its value, or the error of that read alone. */
export type ReadResult<R extends ReadOp = ReadOp> =
  | (R extends { op: 'getData' } ? { ok: true; data: Buffer; stat: Stat } : { ok: true; children: string[] })
  | { ok: false; error: ZooKeeperError };

/** The results of a `readMulti`, one per read, each typed by its read. */
export type ReadResults<R extends readonly ReadOp[]> = { -readonly [K in keyof R]: ReadResult<R[K] & ReadOp> };

/**
 * Bytes a `readMulti` reply spends on one getData besides the node's data
 * (its result header, data length and stat: 81, rounded up).
 */
export const READ_REPLY_OVERHEAD_BYTES = 96;

/**
 * How many getData of nodes holding at most `maxDataBytes` each one
 * `readMulti` may carry so that its reply stays under the packet limit
 * (MULTI_BYTE_LIMIT): 900 nodes of 1 KB, 1 node of 512 KB. A getChildren adds
 * its whole listing (about 4 + name length per child) to the reply.
 */
export function readMultiBatchSize(maxDataBytes: number): number {
  return Math.max(1, Math.floor(MULTI_BYTE_LIMIT / (Math.max(0, maxDataBytes) + READ_REPLY_OVERHEAD_BYTES)));
}

/** An upper bound of the bytes one read adds to a `readMulti` request (as `opBytes`). */
export function readOpBytes(read: ReadOp, namespace = ''): number {
  return 64 + namespaceBytes(namespace) + Buffer.byteLength(read.path);
}
