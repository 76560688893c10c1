/**
 * A multi's reply (ZooKeeper's MultiResponse) parsed in place: a read-only
 * multi's read results, a write multi's write results. The wire client's
 * own parser builds a record object per field and knows no read result.
 */
import type { Stat } from '../types.js';

export const OP = { GET_DATA: 4, GET_CHILDREN: 8, MULTI: 14, MULTI_READ: 22, ERROR: -1 } as const;
export const WRITE_OP = { create: 1, delete: 2, setData: 5, check: 13 } as const;
/** Bytes of a MultiHeader: type (int), done (boolean), err (int). */
export const MULTI_HEADER_BYTES = 9;
const STAT_BYTES = 68;

/** One result of a read-only multi, in the order of the ops. */
export type WireReadResult =
  | { type: typeof OP.GET_DATA; data: Buffer; stat: Stat }
  | { type: typeof OP.GET_CHILDREN; children: string[] }
  | { type: typeof OP.ERROR; err: number };

/** One result of a write multi; its stat converted (`toStat`). */
export type WriteResult = { type: number; path?: string; stat?: Stat; err?: number };

/**
 * Parses a MultiResponse made only of read and error results; undefined when
 * it holds anything else (a write multi's reply) or no read result at all.
 */
export function parseReadReply(
  buffer: Buffer,
  offset: number,
): { results: WireReadResult[]; bytes: number } | undefined {
  const results: WireReadResult[] = [];
  let at = offset;
  let reads = 0;
  for (;;) {
    const type = buffer.readInt32BE(at);
    const done = buffer.readUInt8(at + 4) === 1;
    at += MULTI_HEADER_BYTES;
    if (done) break;
    if (type === OP.GET_DATA) {
      const length = buffer.readInt32BE(at);
      at += 4;
      const data = length > 0 ? Buffer.from(buffer.subarray(at, at + length)) : Buffer.alloc(0);
      at += Math.max(0, length);
      results.push({ type, data, stat: readStat(buffer, at) });
      at += STAT_BYTES;
      reads++;
    } else if (type === OP.GET_CHILDREN) {
      const count = buffer.readInt32BE(at);
      at += 4;
      const children: string[] = [];
      for (let i = 0; i < count; i++) {
        const length = buffer.readInt32BE(at);
        children.push(buffer.toString('utf8', at + 4, at + 4 + length));
        at += 4 + length;
      }
      results.push({ type, children });
      reads++;
    } else if (type === OP.ERROR) {
      results.push({ type, err: buffer.readInt32BE(at) });
      at += 4;
    } else return undefined;
  }
  return reads > 0 ? { results, bytes: at - offset } : undefined;
}

/**
 * Parses a write multi's MultiResponse in place (the wire client builds a
 * record object per field): `{ type, path }` for a create (the client's
 * chroot taken off, as it does), `{ type, stat }` for a setData (a Stat as
 * `toStat` makes it), `{ type }` for a delete or check, `{ type, err }` for
 * an error. Undefined when it holds anything else.
 */
export function parseWriteReply(
  buffer: Buffer,
  offset: number,
  chroot?: string,
): { results: WriteResult[]; bytes: number } | undefined {
  const results: WriteResult[] = [];
  let at = offset;
  for (;;) {
    const type = buffer.readInt32BE(at);
    const done = buffer.readUInt8(at + 4) === 1;
    at += MULTI_HEADER_BYTES;
    if (done) break;
    if (type === WRITE_OP.create) {
      const length = buffer.readInt32BE(at);
      let path = length > 0 ? buffer.toString('utf8', at + 4, at + 4 + length) : '';
      at += 4 + Math.max(0, length);
      if (chroot && path.startsWith(chroot)) path = path.slice(chroot.length) || '/';
      results.push({ type, path });
    } else if (type === WRITE_OP.setData) {
      results.push({ type, stat: readStat(buffer, at) });
      at += STAT_BYTES;
    } else if (type === WRITE_OP.delete || type === WRITE_OP.check) {
      results.push({ type });
    } else if (type === OP.ERROR) {
      results.push({ type, err: buffer.readInt32BE(at) });
      at += 4;
    } else return undefined;
  }
  return { results, bytes: at - offset };
}

/**
 * A signed 64-bit integer as the Number nearest to it, as
 * `Number(b.readBigInt64BE(at))` gives it, without making a BigInt: the high
 * half times 2^32 is exact, and one addition rounds the sum as the
 * conversion does. A reply holds five in every stat, two stats a claimed job.
 */
export function readLong(b: Buffer, at: number): number {
  return b.readInt32BE(at) * 2 ** 32 + b.readUInt32BE(at + 4);
}

/** A Stat record, converted as `toStat` converts the wire client's. */
function readStat(b: Buffer, at: number): Stat {
  const long = (o: number) => readLong(b, at + o);
  return {
    czxid: long(0),
    mzxid: long(8),
    ctime: long(16),
    mtime: long(24),
    version: b.readInt32BE(at + 32),
    cversion: b.readInt32BE(at + 36),
    aversion: b.readInt32BE(at + 40),
    // a persistent node's (no session) read as it is, the rest through a BigInt
    ephemeralOwner:
      b.readUInt32BE(at + 44) === 0 && b.readUInt32BE(at + 48) === 0 ? '0' : b.readBigUInt64BE(at + 44).toString(16),
    dataLength: b.readInt32BE(at + 52),
    numChildren: b.readInt32BE(at + 56),
    pzxid: long(60),
  };
}
