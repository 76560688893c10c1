/**
 * A session's wire client: the extensions of wire.ts its options need,
 * checked before connecting, and each new client (first connection, and
 * after every expiry) built with them.
 */
import type { ConnectionOptions as NodeTlsOptions } from 'node:tls';
import { WIRE_EXTENSIONS_VERSION, WireClientMismatchError } from './errors.js';
import { DEFAULT_SESSION_TIMEOUT_MS, type SessionOptions } from './session-types.js';
import {
  acceptUnknownErrorCodes,
  discardTornReplies,
  onConnectionRefused,
  onSecurityFailure,
  requestPipeProblems,
  tlsProblems,
  tuneClient,
  useSasl,
  useTls,
  type WireClient,
  wire,
} from './wire.js';

/** Throws WireClientMismatchError when the installed wire client cannot carry `options`' SASL or TLS. */
export function checkWireExtensions(options: SessionOptions): void {
  if (options.sasl) {
    // without the request pipe, requests would not wait for the exchange
    const problems = requestPipeProblems();
    if (problems.length > 0) throw new WireClientMismatchError(WIRE_EXTENSIONS_VERSION, problems);
  }
  if (options.tls) {
    // a connection that cannot be made secure is not made in the clear instead
    const problems = tlsProblems();
    if (problems.length > 0) throw new WireClientMismatchError(WIRE_EXTENSIONS_VERSION, problems);
  }
}

/** What a wire client tells its session about its connections. */
export interface WireClientListeners {
  /** The server refused the connection itself, with this code (see onConnectionRefused). */
  refused(code: number): void;
  /** A TLS connection failed for good (see onSecurityFailure). */
  insecure(err: Error): void;
}

/** A new wire client for `options`, not yet connected. */
export function createWireClient(options: SessionOptions, on: WireClientListeners): WireClient {
  const client = wire.createClient(options.connectionString, {
    sessionTimeout: options.sessionTimeout ?? DEFAULT_SESSION_TIMEOUT_MS,
    spinDelay: 200,
    retries: 0,
  });
  // Fewer writes, copies and wrappers per request (wire.ts); a client it does not know stays as it is.
  tuneClient(client);
  // Error codes the client lacks become errors of their request, not exceptions from its socket.
  acceptUnknownErrorCodes();
  if (options.auth) client.addAuthInfo('digest', Buffer.from(options.auth));
  discardTornReplies(client);
  onConnectionRefused(client, on.refused);
  if (options.tls) {
    useTls(client, options.tls as NodeTlsOptions);
    onSecurityFailure(client, on.insecure);
  }
  if (options.sasl) useSasl(client, options.sasl);
  return client;
}
