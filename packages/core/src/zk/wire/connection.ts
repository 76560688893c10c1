/**
 * The wire client's connection, from outside: dropping it (so that it
 * reconnects), starting each one at a reply boundary, and telling the
 * session when the server refuses the connection itself.
 */
import type { WireClient } from './convert.js';
import type { ManagerLike } from './internals.js';

/**
 * Closes the client's current socket so that it reconnects (used when the
 * connection has gone silent). The wire client offers no public call for it.
 */
export function dropConnection(client: WireClient): void {
  const manager = (client as unknown as { connectionManager?: { socket?: { destroy(): void } } }).connectionManager;
  manager?.socket?.destroy();
}

/**
 * Makes every connection of `client` start reading at a reply boundary. The
 * wire client keeps the bytes of a reply that was torn when its socket died
 * and glues the next connection's first bytes to them: the handshake reply
 * is then misread (a garbage session id and timeout, or a wait for bytes
 * that never come) and the session is lost, or worse, it seems connected
 * while nothing it reads makes sense. Dropped on every disconnection.
 */
export function discardTornReplies(client: WireClient): void {
  const manager = (client as unknown as { connectionManager?: TornReplyHolder }).connectionManager;
  if (!manager) return;
  const disconnected = (manager.constructor as { STATES?: { DISCONNECTED?: number } }).STATES?.DISCONNECTED;
  manager.on('state', (state) => {
    if (state === disconnected) manager.pendingBuffer = null;
  });
}

interface TornReplyHolder {
  pendingBuffer: Buffer | null;
  on(event: 'state', listener: (state: number) => void): void;
}

/** Reply xids the server answers outside any request: pings and auth packets. */
const XID = { PING: -2, AUTH: -4 } as const;
/** The server closes the connection after answering this code, whatever the request. */
const REQUIRE_AUTH_CODE = -124;
const REFUSED = Symbol.for('zkq.wire.refused');

/**
 * Calls `listener` with the code when the server answers `client`'s
 * connection itself with an error: a ping or auth packet answered with any
 * code but success, or any reply saying SessionClosedRequireAuth (-124; the
 * server closes the connection after it). Such an answer would otherwise be
 * dropped or seen by one request only. Needs the request pipe (`tuneClient`),
 * which reads every reply first.
 */
export function onConnectionRefused(client: WireClient, listener: (code: number) => void): void {
  const manager = (client as unknown as { connectionManager?: Record<symbol, unknown> }).connectionManager;
  if (manager) manager[REFUSED] = listener;
}

/** The code of a reply that refuses the connection itself (see onConnectionRefused), or undefined. */
export function refusalCode(packet: Buffer): number | undefined {
  if (packet.length < 20) return undefined;
  const xid = packet.readInt32BE(4);
  const err = packet.readInt32BE(16);
  if (err === REQUIRE_AUTH_CODE || ((xid === XID.PING || xid === XID.AUTH) && err !== 0)) return err;
  return undefined;
}

/** Reports a refusal of `m`'s connection to its onConnectionRefused listener. */
export function refuse(m: ManagerLike, code: number): void {
  (m as unknown as Record<symbol, ((code: number) => void) | undefined>)[REFUSED]?.(code);
}
