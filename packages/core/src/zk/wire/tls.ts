/**
 * TLS for the wire client, which only opens plain TCP sockets: each
 * connection of a client made with tls.connect instead.
 */
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { type ConnectionOptions as NodeTlsOptions, connect as tlsConnect } from 'node:tls';
import type { WireClient } from './convert.js';
import { type Methods, STATE } from './internals.js';

// The connection manager opens each connection with `net.connect(server)` in
// its `connect`. `useTls` gives one client's manager a `connect` of its own
// doing the same with `tls.connect`: the same server rotation
// (findNextServer), connect timeout and socket handlers, the handshake
// (ConnectRequest) sent once TLS is up ('secureConnect'), so a handshake that
// hangs runs into the connect timeout. Kept for every reconnection, to
// whichever server comes next. A TLS error that retrying cannot cure (an
// untrusted, expired or misnamed certificate; the server refusing ours) is
// reported to the `onSecurityFailure` listener instead of being retried.

const SECURITY = Symbol.for('zkq.wire.security');
const TLS_STATEMENTS = [
  'self.setState(STATES.CONNECTING);',
  'self.findNextServer(function (server) {',
  'self.socket = net.connect(server);',
  'self.connectTimeoutHandler = setTimeout(',
  'self.onSocketConnectTimeout.bind(self),',
  'self.connectTimeout',
  'self.socket.setNoDelay();',
  "self.socket.on('connect', self.onSocketConnected.bind(self));",
  "self.socket.on('data', self.onSocketData.bind(self));",
  "self.socket.on('drain', self.onSocketDrain.bind(self));",
  "self.socket.on('close', self.onSocketClosed.bind(self));",
  "self.socket.on('error', self.onSocketError.bind(self));",
];

/** What differs, in the given connection manager, from what `useTls` re-implements (empty: all fine). */
export function tlsProblems(
  manager: { prototype?: Methods } = createRequire(import.meta.url)('node-zookeeper-client/lib/ConnectionManager.js'),
): string[] {
  const connect = manager.prototype?.connect;
  const source = typeof connect === 'function' ? String(connect) : '';
  const problems = TLS_STATEMENTS.filter((statement) => !source.includes(statement)).map(
    (statement) => `ConnectionManager.prototype.connect no longer does \`${statement}\``,
  );
  for (const method of ['findNextServer', 'onSocketConnected', 'onSocketConnectTimeout', 'setState']) {
    if (typeof manager.prototype?.[method] !== 'function')
      problems.push(`ConnectionManager.prototype.${method} is missing`);
  }
  return problems;
}

/** TLS error codes after which connecting again cannot succeed. */
const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** True for a TLS failure that retrying cannot cure: a certificate refused by either side, or no common protocol. */
export function isSecurityFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  return TLS_VERIFY_CODES.has(code) || code.startsWith('ERR_SSL_');
}

interface TlsManager {
  state: number;
  connect(): void;
  socket?: unknown;
  connectTimeout: number;
  connectTimeoutHandler: NodeJS.Timeout | null;
  setState(state: number): void;
  findNextServer(callback: (server: { host: string; port: number }) => void): void;
  onSocketConnected(): void;
  onSocketConnectTimeout(): void;
  onSocketData(buffer: Buffer): void;
  onSocketDrain(): void;
  onSocketClosed(hadError: boolean): void;
  onSocketError(err: Error): void;
}

/**
 * Makes every connection of `client` (not yet connected) TLS with `options`
 * (Node's tls.connect options; `servername` defaults to each server's host
 * unless it is an IP address). Returns what differs from the checked wire
 * client instead, leaving the client as it is: the caller must then refuse
 * to connect, as the connection would not be secure.
 */
export function useTls(client: WireClient, options: NodeTlsOptions): string[] {
  const problems = tlsProblems();
  if (problems.length > 0) return problems;
  const m = (client as unknown as { connectionManager?: TlsManager }).connectionManager;
  if (!m) return ['the client has no connection manager'];
  const connecting = (m.constructor as { STATES?: { CONNECTING?: number } }).STATES?.CONNECTING ?? STATE.CONNECTING;
  m.connect = function connect(this: TlsManager): void {
    this.setState(connecting);
    this.findNextServer((server) => {
      const servername = options.servername ?? (isIP(server.host) ? undefined : server.host);
      const socket = tlsConnect({
        ...options,
        host: server.host,
        port: server.port,
        ...(servername ? { servername } : {}),
      });
      this.socket = socket;
      this.connectTimeoutHandler = setTimeout(this.onSocketConnectTimeout.bind(this), this.connectTimeout);
      socket.setNoDelay();
      socket.on('secureConnect', this.onSocketConnected.bind(this));
      socket.on('data', this.onSocketData.bind(this));
      socket.on('drain', this.onSocketDrain.bind(this));
      socket.on('close', this.onSocketClosed.bind(this));
      socket.on('error', (err: Error) => {
        if (this.socket === socket && isSecurityFailure(err)) {
          (this as unknown as Record<symbol, ((err: Error) => void) | undefined>)[SECURITY]?.(err);
        }
        this.onSocketError(err);
      });
    });
  };
  return [];
}

/** Calls `listener` with the error when a TLS connection of `client` fails for good (see useTls). */
export function onSecurityFailure(client: WireClient, listener: (err: Error) => void): void {
  const manager = (client as unknown as { connectionManager?: Record<symbol, unknown> }).connectionManager;
  if (manager) manager[SECURITY] = listener;
}
