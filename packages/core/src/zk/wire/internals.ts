/**
 * What the extensions know of node-zookeeper-client's insides: the exact
 * release they were written against, its connection manager's states, op
 * codes and shape as they use it, and the mark a tuned manager carries.
 * Each extension checks the statements it relies on before it installs.
 */

/** The exact release of node-zookeeper-client the extensions were written against. */
export const WIRE_CLIENT_VERSION = '1.1.3';

/** Marks a manager carrying the request pipe, and a packet serialized when queued. */
export const TUNED = Symbol.for('zkq.wire.tuned');
export const STATE = { CONNECTING: 1, CONNECTED: 2, CONNECTED_READ_ONLY: 3, CLOSING: -1 } as const;
export const PIPE_OP = {
  CREATE: 1,
  DELETE: 2,
  EXISTS: 3,
  GET_DATA: 4,
  SET_DATA: 5,
  PING: 11,
  GET_CHILDREN2: 12,
} as const;
export const PIPE_OP_MORE = { AUTH: 100, SET_WATCHES: 101, CLOSE_SESSION: -11 } as const;

export interface PacketLike {
  request: { header: { xid: number; type: number } | null; toBuffer(): Buffer };
  /** The request's bytes, serialized when queued. */
  [TUNED]?: Buffer | undefined;
}
export interface SocketLike {
  write(buffer: Buffer): boolean;
  destroy(): void;
  destroyed?: boolean;
}
export type Reply = (err: unknown, response?: { header: { err: number }; payload: Record<string, unknown> }) => void;
export interface ManagerLike {
  state: number;
  xid: number;
  socket?: SocketLike;
  pendingBuffer: Buffer | null;
  pendingQueue: PacketLike[];
  packetQueue: { queue: PacketLike[]; shift(): PacketLike | undefined } & Pick<
    NodeJS.EventEmitter,
    'on' | 'removeAllListeners'
  >;
  onPacketQueueReadable(): void;
  onSocketData(buffer: Buffer): void;
  queue(request: object, callback: Reply): void;
  registerDataWatcher(path: string, watcher: unknown): void;
  registerChildWatcher(path: string, watcher: unknown): void;
  registerExistenceWatcher(path: string, watcher: unknown): void;
}
/** A callback of the wire client's. */
export type Cb = (...args: unknown[]) => void;
export type RecordClass = new () => Record<string, unknown>;
export type Methods = Record<string, unknown> | undefined;
