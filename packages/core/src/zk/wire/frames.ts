/**
 * The request pipe's reads: the input cut into whole packets, each handed to
 * the connection manager's own handler, a packet that does not parse
 * dropping the connection.
 */
import zookeeper from 'node-zookeeper-client';
import { refusalCode, refuse } from './connection.js';
import { wireException } from './convert.js';
import { type Cb, type ManagerLike, type PacketLike, type SocketLike, STATE } from './internals.js';
import { parsingReplyTo } from './multi.js';
import { onSaslReply, saslOf } from './sasl.js';

export function frameReplies(m: ManagerLike): void {
  const handlePacket = m.onSocketData;
  markDeliveries(m);
  let parts: Buffer[] = [];
  let partBytes = 0;
  let partsOf: SocketLike | undefined;
  m.onSocketData = (chunk: Buffer) => {
    const socket = m.socket;
    if (partsOf !== socket) parts = []; // left by a closed connection
    let buffer = chunk;
    if (parts.length > 0) {
      parts.push(chunk);
      partBytes += chunk.length;
      if ((parts[0] as Buffer).length < 4 && partBytes >= 4) parts = [Buffer.concat(parts, partBytes)];
      const first = parts[0] as Buffer;
      if (first.length < 4 || partBytes < first.readInt32BE(0) + 4) return;
      buffer = parts.length === 1 ? first : Buffer.concat(parts, partBytes);
    }
    let at = 0;
    try {
      while (buffer.length - at >= 4) {
        const end = at + 4 + buffer.readInt32BE(at);
        if (end < at + 4) {
          at = buffer.length;
          socket?.destroy(); // a negative length: not a ZooKeeper stream, reconnect
          return;
        }
        if (end > buffer.length) break;
        const packet = buffer.subarray(at, end);
        at = end;
        m.pendingBuffer = null;
        const refused = m.state === STATE.CONNECTING ? undefined : refusalCode(packet);
        if (refused !== undefined) refuse(m, refused);
        const sasl = saslOf(m);
        if (packet.length < (m.state === STATE.CONNECTING ? connectReplyBytes(packet) : REPLY_HEADER_BYTES)) {
          at = buffer.length;
          socket?.destroy(); // shorter than any reply: not a ZooKeeper stream (or read misaligned), reconnect
          return;
        }
        if (sasl?.xid !== undefined && m.state !== STATE.CONNECTING && packet.readInt32BE(4) === sasl.xid) {
          onSaslReply(m, sasl, packet, refused !== undefined);
          continue;
        }
        if (!handleWhole(m, handlePacket, packet, socket)) {
          at = buffer.length; // a reply that does not parse: the connection is dropped, the rest not read
          return;
        }
        if (m.socket !== socket || socket?.destroyed) {
          at = buffer.length; // the handler dropped the connection (a reply out of order): the rest is not read
          return;
        }
      }
    } finally {
      // Also when a callback throws, as the client keeps the unread bytes for the next chunk.
      parts = at < buffer.length ? [buffer.subarray(at)] : [];
      partBytes = buffer.length - at;
      partsOf = socket;
    }
  };
}

/** A reply at its shortest: the length, then a reply header (xid, zxid, err). */
const REPLY_HEADER_BYTES = 4 + 16;
/** A connect reply at its shortest: the length, protocol version, timeout, session id, an empty password. */
const CONNECT_REPLY_BYTES = 4 + 20;
/** Bytes a connect reply must have: its password's length read where it is, if there (the client's parser reads past the end). */
function connectReplyBytes(packet: Buffer): number {
  return packet.length < CONNECT_REPLY_BYTES
    ? CONNECT_REPLY_BYTES
    : CONNECT_REPLY_BYTES + Math.max(0, packet.readInt32BE(20));
}

/** Set while the manager's handler hands a reply on (a request's callback, a watch event, a state change). */
let delivering = false;

/**
 * Hands one whole packet to the manager's own handler. A reply that does not
 * parse (a length running past its end: garbage, or a stream read out of
 * step) throws from the client's parser inside the socket's data handler,
 * where nobody can catch it: the connection is dropped instead (the client
 * reconnects) and false returned. Whatever the handler took off the pending
 * queue without answering it (that reply, or one whose xid is not the
 * request's, which the handler answers by dropping the connection) is told
 * of a connection loss, so that it waits for nothing. An exception thrown
 * while a reply is handed on is the receiver's own and goes on.
 */
function handleWhole(m: ManagerLike, handlePacket: (b: Buffer) => void, packet: Buffer, socket?: SocketLike): boolean {
  const head = m.pendingQueue[0] as (PacketLike & { callback?: Cb }) | undefined;
  const callback = head?.callback;
  if (head && callback) {
    head.callback = (...args) => {
      delivering = true;
      callback(...args);
    };
  }
  parsingReplyTo(head?.request);
  delivering = false;
  let parsed = true;
  try {
    handlePacket.call(m, packet);
  } catch (err) {
    if (delivering) throw err;
    parsed = false;
    socket?.destroy();
  } finally {
    parsingReplyTo(undefined);
    if (head && callback) head.callback = callback;
    const unanswered = head && m.pendingQueue[0] !== head && !m.pendingQueue.includes(head) && !delivering;
    delivering = false;
    if (unanswered) callback?.(wireException(zookeeper.Exception.CONNECTION_LOSS));
  }
  return parsed;
}

/** Marks every way the manager hands a reply on (see handleWhole). */
function markDeliveries(m: ManagerLike): void {
  const marked = m as unknown as {
    emit: (...args: unknown[]) => boolean;
    watcherManager?: { emit: (...args: unknown[]) => unknown };
  };
  const emit = marked.emit;
  marked.emit = function (this: unknown, ...args: unknown[]) {
    delivering = true;
    return emit.apply(this, args);
  };
  const watchers = marked.watcherManager;
  if (watchers) {
    const emitWatch = watchers.emit;
    watchers.emit = function (this: unknown, ...args: unknown[]) {
      delivering = true;
      return emitWatch.apply(this, args);
    };
  }
}
