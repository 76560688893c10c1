/**
 * A session's `multi` and `readMulti` between its own types and the wire's:
 * the checks before sending, the ops as the wire sends them, and the
 * results (or the failing op's typed error) as the caller gets them.
 */
import { BadArgumentsError, errorFromCode, type ZooKeeperError } from './errors.js';
import {
  MULTI_BYTE_LIMIT,
  MULTI_OVERHEAD_BYTES,
  opBytes,
  type ReadOp,
  type ReadResult,
  readOpBytes,
} from './multi-size.js';
import type { SessionStats } from './session-types.js';
import type { Op, OpResult, Stat } from './types.js';
import { type WireOp, type WireReadResult, type WriteResult, wireMode } from './wire.js';

/** Refuses a multi that would pass ZooKeeper's packet limit (estimated by `opBytes`). */
export function checkMultiSize(ops: readonly Op[], namespace: string): void {
  let bytes = MULTI_OVERHEAD_BYTES;
  for (const op of ops) bytes += opBytes(op, namespace);
  if (bytes > MULTI_BYTE_LIMIT) {
    throw new BadArgumentsError(`multi of ${ops.length} ops is ~${bytes} bytes, past the ZooKeeper packet limit`);
  }
}

/** The ops as the wire sends them, their paths made absolute by `abs`. */
export function toWireOps(ops: readonly Op[], abs: (path: string) => string): WireOp[] {
  // each op built field by field (a spread copies whatever else the caller's op carries)
  return ops.map((op): WireOp => {
    const path = abs(op.path);
    switch (op.op) {
      case 'create':
        return { op: 'create', path, data: op.data, mode: wireMode(op.mode ?? 'persistent') };
      case 'setData':
        return { op: 'setData', path, data: op.data, version: op.version ?? -1 };
      case 'delete':
        return { op: 'delete', path, version: op.version ?? -1 };
      default:
        return { op: 'check', path, version: op.version };
    }
  });
}

/** The results of a multi that applied, created paths made relative by `rel`. */
export function toOpResults(results: WriteResult[], ops: readonly Op[], rel: (path: string) => string): OpResult[] {
  return results.map((r, i) => {
    const op = ops[i] as Op;
    if (op.op === 'create') return { op: 'create', path: rel(r.path ?? '') };
    if (op.op === 'setData') return { op: 'setData', stat: r.stat as Stat };
    return { op: op.op };
  });
}

/** Re-types a multi failure as the failing op's error, with its index and path. */
export function multiError(err: unknown, ops: readonly Op[]): unknown {
  const typed = err as ZooKeeperError;
  const results = (err as { results?: { err?: number }[] }).results;
  if (!results || !('zkCode' in typed)) return err;
  const index = results.findIndex((r) => r.err !== undefined && r.err !== 0 && r.err !== -2);
  if (index < 0) return err;
  const failed = errorFromCode(results[index]?.err as number, ops[index]?.path);
  failed.opIndex = index;
  return failed;
}

/** Refuses a read that is not a getData or a getChildren, and reads past the packet limit (`readOpBytes`). */
export function checkReads(reads: readonly ReadOp[], namespace: string): void {
  let bytes = MULTI_OVERHEAD_BYTES;
  for (const read of reads) {
    const op: string = read.op;
    if (op !== 'getData' && op !== 'getChildren') {
      throw new BadArgumentsError(`readMulti takes getData and getChildren reads, not '${op}'`, read.path);
    }
    bytes += readOpBytes(read, namespace);
  }
  if (bytes > MULTI_BYTE_LIMIT) {
    throw new BadArgumentsError(
      `readMulti of ${reads.length} reads is ~${bytes} bytes, past the ZooKeeper packet limit`,
    );
  }
}

/** One read's result: its value, or its own typed error; a listing counts in `stats`. */
export function toReadResult(r: WireReadResult, read: ReadOp, stats: SessionStats): ReadResult {
  if (r.type === -1) return { ok: false, error: errorFromCode(r.err, read.path) };
  if (r.type === 4) return { ok: true, data: r.data, stat: r.stat };
  if (r.children.length > stats.maxChildren) {
    stats.maxChildren = r.children.length;
    stats.maxChildrenPath = read.path;
  }
  return { ok: true, children: r.children };
}
