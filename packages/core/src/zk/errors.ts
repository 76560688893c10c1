/**
 * Typed ZooKeeper errors. Every failed operation of the session layer rejects
 * with a `ZooKeeperError` subclass that carries the server's numeric code
 * (`zkCode`), a stable string `code` and the path the operation was about.
 */
import { ZkqError } from '../errors.js';

/** Numeric codes of the ZooKeeper protocol (KeeperException.Code). */
export const ZK_CODES = {
  SYSTEM_ERROR: -1,
  RUNTIME_INCONSISTENCY: -2,
  DATA_INCONSISTENCY: -3,
  CONNECTION_LOSS: -4,
  MARSHALLING_ERROR: -5,
  UNIMPLEMENTED: -6,
  OPERATION_TIMEOUT: -7,
  BAD_ARGUMENTS: -8,
  API_ERROR: -100,
  NO_NODE: -101,
  NO_AUTH: -102,
  BAD_VERSION: -103,
  NO_CHILDREN_FOR_EPHEMERALS: -108,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  INVALID_CALLBACK: -113,
  INVALID_ACL: -114,
  AUTH_FAILED: -115,
  SESSION_MOVED: -118,
  REQUEST_TIMEOUT: -122,
  /** The server requires SASL authentication and closes the connection (3.7+: `enforce.auth.enabled`). */
  SESSION_CLOSED_REQUIRE_AUTH: -124,
  /** A hard quota was exceeded (3.7+). */
  QUOTA_EXCEEDED: -125,
  /** The server shed the request under load, without applying it (3.6+). */
  THROTTLED: -127,
} as const;

/** Any error reported by ZooKeeper or by the session layer on its behalf. */
export class ZooKeeperError extends ZkqError {
  /** Index of the failing operation when this error comes from a `multi`. */
  opIndex?: number;

  constructor(
    code: string,
    /** ZooKeeper's numeric error code (see `ZK_CODES`). */
    readonly zkCode: number,
    message: string,
    /** The path the operation was about (inside the namespace). */
    readonly path?: string,
    options?: { cause?: unknown },
  ) {
    super(code, path ? `${message}: ${path}` : message, options);
  }
}

/**
 * The base of an error class that ZooKeeper reports with a fixed code and
 * message about one path: each class keeps its own name, `code` and
 * `instanceof`, written in one line.
 */
function ZooKeeperErrorOf(code: string, zkCode: number, message: string): new (path?: string) => ZooKeeperError {
  return class extends ZooKeeperError {
    constructor(path?: string) {
      super(code, zkCode, message, path);
    }
  };
}

export class NoNodeError extends ZooKeeperErrorOf('ZK_NO_NODE', ZK_CODES.NO_NODE, 'node does not exist') {}

export class NodeExistsError extends ZooKeeperErrorOf('ZK_NODE_EXISTS', ZK_CODES.NODE_EXISTS, 'node already exists') {}

export class BadVersionError extends ZooKeeperErrorOf(
  'ZK_BAD_VERSION',
  ZK_CODES.BAD_VERSION,
  'version does not match',
) {}

export class NotEmptyError extends ZooKeeperErrorOf('ZK_NOT_EMPTY', ZK_CODES.NOT_EMPTY, 'node has children') {}

/** The session's identities (digest auth) do not grant the permission the operation needs. */
export class NoAuthError extends ZooKeeperErrorOf(
  'ZK_NO_AUTH',
  ZK_CODES.NO_AUTH,
  'not authorized (check the connection auth and the ACL of the node)',
) {}

export class AuthFailedError extends ZooKeeperError {
  constructor() {
    super('ZK_AUTH_FAILED', ZK_CODES.AUTH_FAILED, 'authentication failed');
  }
}

/**
 * The server requires authentication (SASL) that this connection has not
 * done, and closed the connection (ZooKeeper's `SessionClosedRequireAuth`,
 * -124, with `enforce.auth.enabled`). Nothing was applied; retrying without
 * credentials cannot succeed, so the session fails for good.
 */
export class AuthRequiredError extends ZooKeeperErrorOf(
  'ZK_AUTH_REQUIRED',
  ZK_CODES.SESSION_CLOSED_REQUIRE_AUTH,
  'the server requires authentication this connection has not done (configure SASL credentials)',
) {}

/**
 * The secure connection to ZooKeeper could not be made: the server's
 * certificate is not trusted, has expired or does not name the server, or
 * the server refused this client's certificate (none, expired, not signed by
 * a CA it trusts). Retrying cannot help, so the session fails for good at
 * once instead of reconnecting. `reason` is the TLS error code (e.g.
 * `CERT_HAS_EXPIRED`, `ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE`); `cause` the error.
 */
export class ConnectionSecurityError extends ZooKeeperError {
  readonly reason: string;

  constructor(cause: unknown, path?: string) {
    const reason = String((cause as { code?: unknown } | undefined)?.code ?? 'TLS');
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      'ZK_CONNECTION_SECURITY',
      ZK_CODES.CONNECTION_LOSS,
      `secure connection to ZooKeeper failed: ${detail}`,
      path,
      {
        cause,
      },
    );
    this.reason = reason;
  }
}

/** A hard quota (node count or bytes) set on a parent would be exceeded; nothing was applied. */
export class QuotaExceededError extends ZooKeeperErrorOf(
  'ZK_QUOTA_EXCEEDED',
  ZK_CODES.QUOTA_EXCEEDED,
  'quota exceeded',
) {}

/**
 * The server shed the request under load without applying it: safe to send
 * again after a pause, also for a write (the session's retry policy does for
 * the requests it retries).
 */
export class ThrottledError extends ZooKeeperErrorOf(
  'ZK_THROTTLED',
  ZK_CODES.THROTTLED,
  'the server is throttling requests',
) {}

export class InvalidAclError extends ZooKeeperErrorOf('ZK_INVALID_ACL', ZK_CODES.INVALID_ACL, 'invalid ACL') {}

export class NoChildrenForEphemeralsError extends ZooKeeperErrorOf(
  'ZK_NO_CHILDREN_FOR_EPHEMERALS',
  ZK_CODES.NO_CHILDREN_FOR_EPHEMERALS,
  'ephemeral nodes cannot have children',
) {}

/**
 * The connection dropped before the reply came. The operation may or may not
 * have been applied: only idempotent operations are retried on it.
 */
export class ConnectionLossError extends ZooKeeperErrorOf(
  'ZK_CONNECTION_LOSS',
  ZK_CODES.CONNECTION_LOSS,
  'connection lost before the reply',
) {}

/** The session expired: its ephemeral nodes and watches are gone. */
export class SessionExpiredError extends ZooKeeperErrorOf(
  'ZK_SESSION_EXPIRED',
  ZK_CODES.SESSION_EXPIRED,
  'session expired',
) {}

/**
 * No reply within the request timeout. Like a connection loss, the outcome is
 * unknown; the request may still be applied later.
 */
export class RequestTimeoutError extends ZooKeeperError {
  constructor(
    readonly timeoutMs: number,
    path?: string,
  ) {
    super('ZK_REQUEST_TIMEOUT', ZK_CODES.OPERATION_TIMEOUT, `no reply within ${timeoutMs} ms`, path);
  }
}

/** No connection to any server could be made within the connect timeout. */
export class ConnectTimeoutError extends ZooKeeperError {
  constructor(
    readonly connectionString: string,
    readonly timeoutMs: number,
  ) {
    super(
      'ZK_CONNECT_TIMEOUT',
      ZK_CODES.CONNECTION_LOSS,
      `could not connect to ZooKeeper at ${connectionString} within ${timeoutMs} ms`,
    );
  }
}

/** The request was refused locally: bad path, oversized data, bad arguments. */
export class BadArgumentsError extends ZooKeeperError {
  constructor(message: string, path?: string) {
    super('ZK_BAD_ARGUMENTS', ZK_CODES.BAD_ARGUMENTS, message, path);
  }
}

/** The session was closed by its owner; no further operations are possible. */
export class SessionClosedError extends ZooKeeperErrorOf(
  'ZK_SESSION_CLOSED',
  ZK_CODES.CONNECTION_LOSS,
  'session is closed',
) {}

/** The release of node-zookeeper-client the session layer extends at runtime. */
export const WIRE_EXTENSIONS_VERSION = '1.1.3';

/**
 * The installed node-zookeeper-client is not the release the session layer
 * extends at runtime: thrown on first use of `readMulti`, or by
 * `Session.connect` with `tls`, naming what differs. Nothing was sent.
 */
export class WireClientMismatchError extends ZkqError {
  constructor(
    /** The release the extension was written against. */
    readonly expectedVersion: string,
    readonly problems: readonly string[],
  ) {
    super(
      'ZK_WIRE_CLIENT_MISMATCH',
      `zkq extends node-zookeeper-client ${expectedVersion} (readMulti, TLS) and cannot run on the installed copy: ${problems.join('; ')}`,
    );
  }
}

const BY_CODE: Record<number, (path?: string) => ZooKeeperError> = {
  [ZK_CODES.NO_NODE]: (p) => new NoNodeError(p),
  [ZK_CODES.NODE_EXISTS]: (p) => new NodeExistsError(p),
  [ZK_CODES.BAD_VERSION]: (p) => new BadVersionError(p),
  [ZK_CODES.NOT_EMPTY]: (p) => new NotEmptyError(p),
  [ZK_CODES.NO_AUTH]: (p) => new NoAuthError(p),
  [ZK_CODES.AUTH_FAILED]: () => new AuthFailedError(),
  [ZK_CODES.INVALID_ACL]: (p) => new InvalidAclError(p),
  [ZK_CODES.NO_CHILDREN_FOR_EPHEMERALS]: (p) => new NoChildrenForEphemeralsError(p),
  [ZK_CODES.CONNECTION_LOSS]: (p) => new ConnectionLossError(p),
  [ZK_CODES.SESSION_EXPIRED]: (p) => new SessionExpiredError(p),
  [ZK_CODES.SESSION_CLOSED_REQUIRE_AUTH]: (p) => new AuthRequiredError(p),
  [ZK_CODES.QUOTA_EXCEEDED]: (p) => new QuotaExceededError(p),
  [ZK_CODES.THROTTLED]: (p) => new ThrottledError(p),
};

/**
 * The typed error for a ZooKeeper numeric code. A code this release does not
 * know (a later server's) is a plain `ZooKeeperError` (`ZK_ERROR`) carrying it.
 */
export function errorFromCode(zkCode: number, path?: string): ZooKeeperError {
  const make = BY_CODE[zkCode];
  return make ? make(path) : new ZooKeeperError('ZK_ERROR', zkCode, `ZooKeeper error ${zkCode}`, path);
}

/** True when the outcome of the failed request is unknown (it may have been applied). */
export function isOutcomeUnknown(err: unknown): boolean {
  return err instanceof ConnectionLossError || err instanceof RequestTimeoutError;
}
