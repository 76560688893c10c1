/**
 * Errors of the command line and how every failure becomes one line on
 * stderr and an exit code. Errors are told apart by class or by their stable
 * `code` (ZkqError), never by message text.
 */

/** Exit codes of `zkq` (documented in docs/cli.md). */
export const EXIT = {
  OK: 0,
  /** The operation failed. */
  FAILURE: 1,
  /** Bad usage: unknown command or option, invalid argument or input. */
  USAGE: 2,
  /** ZooKeeper could not be reached, or the connection was lost mid-command. */
  UNREACHABLE: 3,
  /** ZooKeeper refused the credentials or the TLS connection, or the ACL forbids the operation (permission denied). */
  NOT_AUTHORIZED: 4,
  /** The job (or other named thing) does not exist. */
  NOT_FOUND: 5,
  /** The installed library does not support the command yet. */
  NOT_SUPPORTED: 6,
  /** A wait (barrier, lock, add --wait, migrate --wait) ran past its --timeout. */
  TIMEOUT: 7,
  /** The queue does not exist; nothing was created (every command on a queue but add, add-bulk, worker, and pause/resume --create). */
  QUEUE_NOT_FOUND: 8,
  /** `zkq lock`: the connection was suspended or the session lost while the command ran; it was stopped. */
  LOCK_LOST: 9,
  /** The worker was stopped by a second signal before its jobs finished. */
  FORCED: 130,
} as const;

/** What each exit code means, for `zkq --help` (docs/cli.md says the same). */
export const EXIT_MEANINGS: Record<number, string> = {
  [EXIT.OK]: 'ok',
  [EXIT.FAILURE]: 'failed',
  [EXIT.USAGE]: 'bad usage',
  [EXIT.UNREACHABLE]: 'ZooKeeper unreachable',
  [EXIT.NOT_AUTHORIZED]: 'not authorized',
  [EXIT.NOT_FOUND]: 'job not found',
  [EXIT.NOT_SUPPORTED]: 'not supported by the library',
  [EXIT.TIMEOUT]: 'timed out',
  [EXIT.QUEUE_NOT_FOUND]: 'queue not found',
  [EXIT.LOCK_LOST]: 'lock no longer sure (zkq lock stopped the command)',
  [EXIT.FORCED]: 'worker stopped by a second signal',
};

/** A failure the CLI itself detected; its message is shown as is. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.FAILURE,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Bad usage or input (exit 2). */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.USAGE);
    this.name = 'UsageError';
  }
}

/** The library in use lacks an API the command needs (exit 6). */
export class NotSupportedError extends CliError {
  constructor(command: string, api: string) {
    super(`'zkq ${command}' is not supported by this version of zkq (${api} is missing)`, EXIT.NOT_SUPPORTED);
    this.name = 'NotSupportedError';
  }
}

/** The queue does not exist (exit 8). */
export class QueueNotFoundError extends CliError {
  readonly code = 'ZKQ_QUEUE_NOT_FOUND';
  constructor(
    readonly queue: string,
    namespace: string,
  ) {
    super(`queue ${queue} does not exist under /${namespace} (zkq queues lists its queues)`, EXIT.QUEUE_NOT_FOUND);
    this.name = 'QueueNotFoundError';
  }
}

interface CodedError {
  code?: unknown;
  message?: unknown;
  connectionString?: unknown;
  timeoutMs?: unknown;
  path?: unknown;
}

/** The one-line message and exit code for any error a command can end with. */
export function describeError(err: unknown): { message: string; exitCode: number } {
  if (err instanceof CliError) return { message: err.message, exitCode: err.exitCode };
  const e = (err && typeof err === 'object' ? err : {}) as CodedError;
  const raw = typeof e.message === 'string' ? e.message : String(err);
  const message = raw.split('\n')[0] ?? raw;
  switch (e.code) {
    case 'ZK_CONNECT_TIMEOUT':
      return {
        message: `cannot reach ZooKeeper at ${String(e.connectionString)} within ${String(e.timeoutMs)} ms`,
        exitCode: EXIT.UNREACHABLE,
      };
    case 'ZK_CONNECTION_LOSS':
    case 'ZK_SESSION_EXPIRED':
    case 'ZK_SESSION_CLOSED':
      return { message: `lost the connection to ZooKeeper (${message})`, exitCode: EXIT.UNREACHABLE };
    case 'ZK_REQUEST_TIMEOUT':
      return { message: `ZooKeeper did not answer in time (${message})`, exitCode: EXIT.UNREACHABLE };
    case 'ZK_AUTH_FAILED':
      return {
        message: 'ZooKeeper rejected the credentials given with --auth or --sasl',
        exitCode: EXIT.NOT_AUTHORIZED,
      };
    case 'ZK_AUTH_REQUIRED':
      return {
        message: 'ZooKeeper requires SASL authentication, refused or not given (check --sasl)',
        exitCode: EXIT.NOT_AUTHORIZED,
      };
    case 'ZK_CONNECTION_SECURITY':
      return {
        message: `${message} (check --tls-ca, --tls-cert and --tls-key)`,
        exitCode: EXIT.NOT_AUTHORIZED,
      };
    case 'ZK_QUOTA_EXCEEDED':
      return { message: `a ZooKeeper quota was exceeded (${message})`, exitCode: EXIT.FAILURE };
    case 'ZK_THROTTLED':
      return { message: `ZooKeeper is throttling requests, try again (${message})`, exitCode: EXIT.FAILURE };
    case 'ZK_NO_AUTH':
      return { message: noAuthMessage(e.path), exitCode: EXIT.NOT_AUTHORIZED };
    case 'ZKQ_INVALID_ARGUMENT':
    case 'ZKQ_PAYLOAD_TOO_LARGE':
    case 'ZKQ_INVALID_JOB_DATA':
    case 'ZK_BAD_ARGUMENTS':
      return { message, exitCode: EXIT.USAGE };
    case 'ZKQ_JOB_NOT_FOUND':
      return { message, exitCode: EXIT.NOT_FOUND };
    case 'ZKQ_TIMEOUT':
      return { message, exitCode: EXIT.TIMEOUT };
    case 'ZKQ_ZOOKEEPER_NOT_INSTALLED':
      return { message: `ZooKeeper is not installed: ${message}`, exitCode: EXIT.FAILURE };
    case 'ZKQ_ZOOKEEPER_START_FAILED':
      return { message: `ZooKeeper did not start: ${message} (--verbose shows its log)`, exitCode: EXIT.FAILURE };
    case 'ENOENT':
      return { message, exitCode: EXIT.USAGE };
    default:
      return { message, exitCode: EXIT.FAILURE };
  }
}

/**
 * A node's ACL does not grant this identity the operation (another tenant's
 * namespace, say). The path is the session's, relative to the namespace: `/`
 * is the namespace node itself.
 */
function noAuthMessage(path: unknown): string {
  const where =
    path === '/' ? 'the namespace node' : typeof path === 'string' ? `${path} in the namespace` : 'that node';
  return `not authorized: the ACL of ${where} does not grant this identity the operation (check --auth, --sasl or --tls-cert)`;
}

/** Writes the error as one line (`zkq: ...`), the stack too when verbose; returns the exit code. */
export function reportError(err: unknown, verbose: boolean): number {
  const { message, exitCode } = describeError(err);
  process.stderr.write(`zkq: ${message}\n`);
  if (verbose && err instanceof Error && !(err instanceof UsageError)) {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    if (err.cause) process.stderr.write(`caused by: ${String((err.cause as Error).stack ?? err.cause)}\n`);
  }
  return exitCode;
}
