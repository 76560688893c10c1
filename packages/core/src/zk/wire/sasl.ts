/**
 * SASL DIGEST-MD5 on every connection of a client carrying the request pipe,
 * before any other request.
 */
import { DigestMd5Client, type SaslOptions } from '../sasl.js';
import { refuse } from './connection.js';
import type { WireClient } from './convert.js';
import { type ManagerLike, type SocketLike, STATE, TUNED } from './internals.js';

// ZooKeeper's SASL requests (op 102, a token each way) are not in the wire
// client. `useSasl` runs the exchange on each new connection of a client
// carrying the request pipe, before anything else is sent: when the manager
// reports the connection up, the pipe holds every queued request (the
// session's, its auth and set-watches packets, pings) while the tokens go
// out and their replies, recognized by xid, are read here without reaching
// the manager (it does not know op 102). Once the server has proved it knows
// the password, the held requests go, in order. A refusal (an error in a
// reply, a proof that does not match) is reported to the onConnectionRefused
// listener: AuthFailed (-115), or SessionClosedRequireAuth (-124) from a
// server enforcing SASL.

const SASL = Symbol.for('zkq.wire.sasl');
const SASL_OP = 102;
const AUTH_FAILED_CODE = -115;

export interface SaslExchange {
  options: SaslOptions;
  client: DigestMd5Client | undefined;
  /** The xid of the SASL request awaiting its reply. */
  xid: number | undefined;
  /** Requests are held until the exchange completes on the current connection. */
  gated: boolean;
}

/** The SASL exchange of `m`'s connections, if `useSasl` set one up. */
export function saslOf(m: ManagerLike): SaslExchange | undefined {
  return (m as unknown as Record<symbol, SaslExchange | undefined>)[SASL];
}

/**
 * Authenticates every connection of `client` (tuned by `tuneClient`, not yet
 * connected) with SASL DIGEST-MD5 before any other request. Returns what
 * prevents it instead (no request pipe), leaving the client as it is: the
 * caller must then not connect, as a server enforcing SASL would refuse it.
 */
export function useSasl(client: WireClient, options: SaslOptions): string[] {
  const m = (client as unknown as { connectionManager?: ManagerLike }).connectionManager;
  if (!m || !(m as unknown as Record<symbol, unknown>)[TUNED]) return ['the request pipe is not installed'];
  const exchange: SaslExchange = { options, client: undefined, xid: undefined, gated: true };
  (m as unknown as Record<symbol, SaslExchange>)[SASL] = exchange;
  (m as unknown as NodeJS.EventEmitter).on('state', (state: number) => {
    if (state === STATE.CONNECTED || state === STATE.CONNECTED_READ_ONLY) {
      exchange.gated = true;
      exchange.client = new DigestMd5Client(options);
      sendSaslToken(m, exchange, exchange.client.next(Buffer.alloc(0)));
    } else if (state !== STATE.CLOSING) {
      exchange.gated = true;
      exchange.xid = undefined;
    }
  });
  return [];
}

function sendSaslToken(m: ManagerLike, exchange: SaslExchange, token: Buffer): void {
  const xid = m.xid;
  m.xid += 1;
  exchange.xid = xid;
  const packet = Buffer.allocUnsafe(16 + token.length);
  packet.writeInt32BE(12 + token.length, 0);
  packet.writeInt32BE(xid, 4);
  packet.writeInt32BE(SASL_OP, 8);
  packet.writeInt32BE(token.length, 12);
  token.copy(packet, 16);
  (m.socket as SocketLike).write(packet);
}

/** A reply of the SASL exchange: header (xid, zxid, err), then SetSASLResponse (a buffer). */
export function onSaslReply(m: ManagerLike, exchange: SaslExchange, packet: Buffer, refused: boolean): void {
  exchange.xid = undefined;
  const err = packet.readInt32BE(16);
  if (err !== 0) {
    if (!refused) refuse(m, err);
    return;
  }
  const length = packet.length >= 24 ? packet.readInt32BE(20) : -1;
  const challenge = length > 0 ? packet.subarray(24, 24 + length) : Buffer.alloc(0);
  let token: Buffer;
  try {
    token = (exchange.client as DigestMd5Client).next(challenge);
  } catch {
    refuse(m, AUTH_FAILED_CODE); // a challenge this client cannot answer, or a server without the password
    return;
  }
  if (!exchange.client?.done) {
    sendSaslToken(m, exchange, token);
    return;
  }
  exchange.gated = false;
  process.nextTick(() => m.onPacketQueueReadable());
}
