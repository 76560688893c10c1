/**
 * Multi requests of our own, as the wire client's connection manager handles
 * requests: a read-only multi (op 22), and a write multi serialized in one
 * pass.
 */
import type zookeeper from 'node-zookeeper-client';
import { MULTI_HEADER_BYTES, OP, WRITE_OP } from './replies.js';

/** One op of a read-only multi, its path absolute on the server. */
export interface WireRead {
  op: 'getData' | 'getChildren';
  path: string;
}

/**
 * A multi as the connection manager handles requests: it sets `header.xid`,
 * reads `header.type` (MULTI) to pick the reply parser, hands the payload a
 * chroot, and sends `toBuffer()`.
 */
abstract class MultiRequest {
  readonly header = { xid: 0, type: OP.MULTI };
  private chroot = '';
  readonly payload = {
    setChrootPath: (path: string | undefined) => {
      this.chroot = path ?? '';
    },
  };

  protected full(path: string): string {
    if (!this.chroot) return path;
    return path === '/' ? this.chroot : this.chroot + path;
  }

  /** The request: length, xid, `type`, the ops' bytes (`size` of them, written by `write`), the end header. */
  protected frame(type: number, size: number, write: (buffer: Buffer, at: number) => number): Buffer {
    const buffer = Buffer.allocUnsafe(4 + 8 + size + MULTI_HEADER_BYTES);
    let at = buffer.writeInt32BE(8 + size + MULTI_HEADER_BYTES, 0);
    at = buffer.writeInt32BE(this.header.xid, at);
    at = buffer.writeInt32BE(type, at);
    at = write(buffer, at);
    at = buffer.writeInt32BE(-1, at);
    at = buffer.writeUInt8(1, at);
    // Sizes and bytes written disagreeing would send garbage: refuse instead.
    if (buffer.writeInt32BE(-1, at) !== buffer.length) throw new Error('multi request: size and bytes disagree');
    return buffer;
  }

  abstract toBuffer(): Buffer;
}

/** A read-only multi: the manager parses its reply as a multi's; its bytes say op 22. */
export class ReadMultiRequest extends MultiRequest {
  constructor(private readonly reads: readonly WireRead[]) {
    super();
  }

  toBuffer(): Buffer {
    const paths = this.reads.map((r) => Buffer.from(this.full(r.path)));
    let size = 0;
    for (const p of paths) size += MULTI_HEADER_BYTES + 4 + p.length + 1;
    return this.frame(OP.MULTI_READ, size, (buffer, start) => {
      let at = start;
      this.reads.forEach((r, i) => {
        const path = paths[i] as Buffer;
        at = buffer.writeInt32BE(r.op === 'getData' ? OP.GET_DATA : OP.GET_CHILDREN, at);
        at = buffer.writeUInt8(0, at);
        at = buffer.writeInt32BE(-1, at);
        at = buffer.writeInt32BE(path.length, at);
        at += path.copy(buffer, at);
        at = buffer.writeUInt8(0, at); // no watch
      });
      return at;
    });
  }
}

/** One op of a write multi, its path absolute on the server; versions are exact (-1: any). */
export type WireOp =
  | { op: 'create'; path: string; data?: Buffer; mode: number }
  | { op: 'delete'; path: string; version: number }
  | { op: 'setData'; path: string; data: Buffer; version: number }
  | { op: 'check'; path: string; version: number };

const aclBytesCache = new WeakMap<readonly zookeeper.ACL[], Buffer>();

type AclRecord = { byteLength(): number; serialize(buffer: Buffer, offset: number): number };

/** An ACL vector's bytes, by the client's own serializer, once per ACL array (a session has one). */
export function aclBytes(acl: readonly zookeeper.ACL[]): Buffer {
  let bytes = aclBytesCache.get(acl);
  if (!bytes) {
    const parts = [Buffer.alloc(4)];
    (parts[0] as Buffer).writeInt32BE(acl.length);
    for (const a of acl) {
      const record = (a as unknown as { toRecord(): AclRecord }).toRecord();
      const b = Buffer.alloc(record.byteLength());
      record.serialize(b, 0);
      parts.push(b);
    }
    bytes = Buffer.concat(parts);
    aclBytesCache.set(acl, bytes);
  }
  return bytes;
}

/**
 * A write multi serialized straight into one buffer, byte for byte what the
 * wire client's Transaction sends (a unit test compares them) at a fraction
 * of its CPU: the client's generic record serializer measures every record
 * twice and matches each field's type by regular expression. Versions are
 * written as given (the client's Transaction turns version 0 into -1).
 */
export class WriteMultiRequest extends MultiRequest {
  constructor(
    private readonly ops: readonly WireOp[],
    private readonly acl: Buffer,
  ) {
    super();
  }

  toBuffer(): Buffer {
    const paths = this.ops.map((o) => this.full(o.path));
    let size = 0;
    this.ops.forEach((o, i) => {
      size += MULTI_HEADER_BYTES + 4 + Buffer.byteLength(paths[i] as string) + 4;
      if (o.op === 'create') size += 4 + (o.data?.length ?? 0) + this.acl.length;
      else if (o.op === 'setData') size += 4 + o.data.length;
    });
    return this.frame(OP.MULTI, size, (buffer, start) => {
      let at = start;
      this.ops.forEach((o, i) => {
        const path = paths[i] as string;
        at = buffer.writeInt32BE(WRITE_OP[o.op], at);
        at = buffer.writeUInt8(0, at);
        at = buffer.writeInt32BE(-1, at);
        const length = buffer.write(path, at + 4, 'utf8');
        at = buffer.writeInt32BE(length, at) + length;
        if (o.op === 'create') {
          at = writeData(buffer, at, o.data);
          at += this.acl.copy(buffer, at);
          at = buffer.writeInt32BE(o.mode, at);
        } else if (o.op === 'setData') {
          at = writeData(buffer, at, o.data);
          at = buffer.writeInt32BE(o.version, at);
        } else at = buffer.writeInt32BE(o.version, at);
      });
      return at;
    });
  }
}

function writeData(buffer: Buffer, at: number, data: Buffer | undefined): number {
  if (!data) return buffer.writeInt32BE(-1, at);
  const next = buffer.writeInt32BE(data.length, at);
  return next + data.copy(buffer, next);
}
