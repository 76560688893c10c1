/**
 * Error codes the wire client does not know, made errors of the request they
 * answer instead of exceptions thrown from its socket.
 */
import { createRequire } from 'node:module';
import zookeeper from 'node-zookeeper-client';
import type { Methods } from './internals.js';

// The client's Exception.create throws on any code missing from its table
// (1.1.3 knows none after -115), and it is called inside the socket's data
// handler: a reply carrying such a code (SessionClosedRequireAuth -124 from a
// server enforcing SASL, QuotaExceeded -125, Throttled -127, or a code of a
// later release) would end the process with an exception nobody can catch.
// `acceptUnknownErrorCodes` replaces the module's `create` (which the connection
// manager and Transaction look up at each call) by one that returns an
// Exception carrying any code; known codes keep the client's own objects.

/** Names of codes ZooKeeper 3.5-3.9 may answer that the wire client's table lacks. */
const LATER_CODES: Record<number, string> = {
  [-12]: 'UNKNOWN_SESSION',
  [-13]: 'NEW_CONFIG_NO_QUORUM',
  [-14]: 'RECONFIG_IN_PROGRESS',
  [-118]: 'SESSION_MOVED',
  [-119]: 'NOT_READONLY',
  [-120]: 'EPHEMERAL_ON_LOCAL_SESSION',
  [-121]: 'NO_WATCHER',
  [-122]: 'REQUEST_TIMEOUT',
  [-123]: 'RECONFIG_DISABLED',
  [-124]: 'SESSION_CLOSED_REQUIRE_SASL_AUTH',
  [-125]: 'QUOTA_EXCEEDED',
  [-127]: 'THROTTLED_OP',
};
const ACCEPTS_ANY_CODE = Symbol.for('zkq.wire.anyCode');

interface ExceptionModule {
  (code: number, name: string, path: string | undefined, ctor: unknown): void;
  create: ((code: number, path?: string) => unknown) & { [ACCEPTS_ANY_CODE]?: true };
  prototype: object;
  [name: string]: unknown;
}

function loadExceptionModule(): ExceptionModule {
  return createRequire(import.meta.url)('node-zookeeper-client/lib/Exception.js') as ExceptionModule;
}

/** What differs, in the given Exception module, from what `acceptUnknownErrorCodes` relies on (empty: all fine). */
export function unknownCodeProblems(
  exception: ExceptionModule = loadExceptionModule(),
  manager: { prototype?: Methods } = createRequire(import.meta.url)('node-zookeeper-client/lib/ConnectionManager.js'),
): string[] {
  const problems: string[] = [];
  if (exception !== (zookeeper.Exception as unknown)) problems.push('the client exports another Exception module');
  if (typeof exception.create !== 'function' || !String(exception.create).includes('validateCode(code)')) {
    problems.push('Exception.create no longer does `validateCode(code)`');
  }
  if (exception.AUTH_FAILED !== -115 || exception.OK !== 0) problems.push('Exception.AUTH_FAILED or OK changed');
  const onData = manager.prototype?.onSocketData;
  if (typeof onData !== 'function' || !String(onData).includes('Exception.create(responseHeader.err)')) {
    problems.push('ConnectionManager.prototype.onSocketData no longer does `Exception.create(responseHeader.err)`');
  }
  return problems;
}

/**
 * Makes the wire client's Exception.create accept any code (see above).
 * Returns what differs from the checked client instead, leaving it as it is.
 */
export function acceptUnknownErrorCodes(): string[] {
  let exception: ExceptionModule;
  try {
    exception = loadExceptionModule();
  } catch (err) {
    return [`its internals do not load (${String(err)})`];
  }
  if (exception.create[ACCEPTS_ANY_CODE]) return [];
  const problems = unknownCodeProblems(exception);
  if (problems.length > 0) return problems;
  const original = exception.create;
  const known = new Set(Object.values(exception).filter((v): v is number => typeof v === 'number'));
  const create = (code: number, path?: string): unknown => {
    if (typeof code !== 'number' || known.has(code)) return original(code, path);
    // an Exception as the client builds one (getCode, getName, getPath, instanceof), for a code it lacks
    const error = Object.create(exception.prototype) as Error & { code: number; path?: string };
    const name = LATER_CODES[code] ?? `UNKNOWN_CODE_${-code}`;
    Object.assign(error, { code, name, path, message: `Exception: ${name}[${code}]${path ? `@${path}` : ''}` });
    Error.captureStackTrace(error, create);
    return error;
  };
  (create as typeof exception.create)[ACCEPTS_ANY_CODE] = true;
  exception.create = create as typeof exception.create;
  return [];
}
