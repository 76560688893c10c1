/**
 * ZooKeeper wire bytes and a node-zookeeper-client connection manager on a
 * fake socket, for the unit tests of wire.ts's extensions (no server).
 */
import zookeeper from 'node-zookeeper-client';
import { tuneClient } from '../../packages/core/src/zk/wire.ts';

export const int = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
export const long = (n: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  return b;
};
export const str = (s: string): Buffer => Buffer.concat([int(Buffer.byteLength(s)), Buffer.from(s)]);
export const multiHeader = (type: number, done: boolean, err: number): Buffer =>
  Buffer.concat([int(type), Buffer.from([done ? 1 : 0]), int(err)]);
/** A packet: its length, then its bytes. */
export const framed = (...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts);
  return Buffer.concat([int(body.length), body]);
};
/** A reply header: xid, zxid, err. */
export const replyHeader = (xid: number, err = 0): Buffer => Buffer.concat([int(xid), long(99), int(err)]);

/** A Stat record: czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength, numChildren, pzxid. */
export function statBytes(): Buffer {
  return Buffer.concat([
    long(11),
    long(12),
    long(1_700_000_000_000),
    long(1_700_000_000_500),
    int(3),
    int(4),
    int(0),
    long(0x1234abcd),
    int(3),
    int(2),
    long(13),
  ]);
}

/** The server's answer to a connect request: protocol version, timeout, session id, password. */
export const connectReply = (timeout = 30_000): Buffer =>
  framed(int(0), int(timeout), long(0x77), int(16), Buffer.alloc(16, 1));

/** A watch notification (xid -1): event type, keeper state 3 (connected), path. */
export const notification = (type: number, path: string): Buffer =>
  framed(replyHeader(-1), int(type), int(3), str(path));

export interface FakeSocket {
  written: Buffer[];
  destroyed: boolean;
  write(b: Buffer): boolean;
  destroy(): void;
  setTimeout(): void;
}

export function fakeSocket(): FakeSocket {
  return {
    written: [],
    destroyed: false,
    write(b) {
      this.written.push(b);
      return true;
    },
    destroy() {
      this.destroyed = true;
    },
    setTimeout() {},
  };
}

export interface FakeWire {
  client: zookeeper.Client;
  manager: Record<string, unknown> & { pendingQueue: unknown[]; xid: number; state: number };
  socket: FakeSocket;
  /** Everything written so far, on every socket of this fake. */
  written: () => Buffer[];
  receive: (b: Buffer) => void;
  /** Stands a new socket in for the current one (a reconnection, without its handshake). */
  replaceSocket: () => FakeSocket;
}

/**
 * A wire client whose connection manager believes it is connected (xid 7 next)
 * and writes to an array; `tuned` installs wire.ts's request pipe first, as
 * the session does. `retries: 0` as the session creates its clients.
 */
export function fakeWire(options: { tuned: boolean; connectionString?: string; state?: number }): FakeWire {
  const client = zookeeper.createClient(options.connectionString ?? '127.0.0.1:1', { retries: 0 });
  if (options.tuned) {
    const problems = tuneClient(client);
    if (problems.length > 0) throw new Error(`the request pipe did not install: ${problems.join('; ')}`);
  }
  const manager = (client as unknown as { connectionManager: FakeWire['manager'] }).connectionManager;
  const sockets = [fakeSocket()];
  manager.state = options.state ?? 2; // STATES.CONNECTED
  manager.xid = 7;
  manager.socket = sockets[0];
  return {
    client,
    manager,
    get socket() {
      return manager.socket as FakeSocket;
    },
    written: () => sockets.flatMap((s) => s.written),
    receive: (b) => (manager.onSocketData as (b: Buffer) => void).call(manager, b),
    replaceSocket: () => {
      const next = fakeSocket();
      sockets.push(next);
      manager.socket = next;
      return next;
    },
  };
}

/** Lets process.nextTick callbacks (the pipe's scheduled send) run. */
export const nextTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));
