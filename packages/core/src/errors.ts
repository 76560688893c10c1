/**
 * The root of every error zkq raises on purpose. Tell errors apart by class
 * (`instanceof`) or by their stable `code`; never by message text.
 */
export class ZkqError extends Error {
  /** Stable, machine-readable identifier, e.g. `ZKQ_INVALID_ARGUMENT`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** An argument given to a public API is invalid; nothing was done. */
export class InvalidArgumentError extends ZkqError {
  constructor(
    message: string,
    /** The option or argument at fault, e.g. `opts.delay`. */
    readonly argument?: string,
  ) {
    super('ZKQ_INVALID_ARGUMENT', message);
  }
}

/** The object was closed; the call was not made. */
export class ClosedError extends ZkqError {
  constructor(what: string) {
    super('ZKQ_CLOSED', `${what} is closed`);
  }
}

/** An operation was abandoned because its AbortSignal fired. */
export class AbortedError extends ZkqError {
  constructor(what: string, options?: { cause?: unknown }) {
    super('ZKQ_ABORTED', `${what} was aborted`, options);
  }
}

/** A wait (for a lock, a barrier, a connection...) timed out. */
export class TimeoutError extends ZkqError {
  constructor(
    what: string,
    readonly timeoutMs: number,
  ) {
    super('ZKQ_TIMEOUT', `${what} timed out after ${timeoutMs} ms`);
  }
}
