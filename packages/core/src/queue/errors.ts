/** Errors of the job queue that users need to tell apart. */
import { InvalidArgumentError, ZkqError } from '../errors.js';

/**
 * Throw it from a processor to fail the job at once, whatever attempts are
 * left (BullMQ's UnrecoverableError).
 */
export class UnrecoverableError extends Error {
  readonly code = 'ZKQ_UNRECOVERABLE';
  constructor(message?: string) {
    super(message);
    this.name = 'UnrecoverableError';
  }
}

/** The message of BullMQ's RateLimitError, which BullMQ's Worker also recognizes a rate-limit error by. */
export const RATE_LIMIT_ERROR = 'bullmq:rateLimitExceeded';

/**
 * Throw it from a processor (`throw Worker.RateLimitError()`) after
 * `worker.rateLimit(ms)`: the job goes back to waiting, its attempt not
 * counted, and the worker claims nothing until the window ends (BullMQ's
 * RateLimitError).
 */
export class RateLimitError extends Error {
  readonly code = 'ZKQ_RATE_LIMITED';
  constructor(message = RATE_LIMIT_ERROR) {
    super(message);
    this.name = 'RateLimitError';
  }
}

/** Whether `err` asks for the job to wait out a rate limit (zkq's or BullMQ's RateLimitError, by its message). */
export function isRateLimitError(err: unknown): boolean {
  return err instanceof RateLimitError || (err instanceof Error && err.message === RATE_LIMIT_ERROR);
}

/** The message of BullMQ's WaitingChildrenError, which zkq's Worker also recognizes it by. */
export const WAITING_CHILDREN_ERROR = 'bullmq:movedToWaitingChildren';

/**
 * Throw it from a processor after `await job.moveToWaitingChildren()`
 * resolved true: the job waits in waiting-children and runs again once its
 * children are done; this attempt ends without a result (BullMQ's
 * WaitingChildrenError). Thrown without a successful park, it fails the
 * attempt like any error.
 */
export class WaitingChildrenError extends Error {
  readonly code = 'ZKQ_WAITING_CHILDREN';
  constructor(message = WAITING_CHILDREN_ERROR) {
    super(message);
    this.name = 'WaitingChildrenError';
  }
}

/** Whether `err` says the job moved to waiting-children (zkq's or BullMQ's WaitingChildrenError, by name). */
export function isWaitingChildrenError(err: unknown): boolean {
  return err instanceof WaitingChildrenError || (err instanceof Error && err.name === 'WaitingChildrenError');
}

/** A job's serialized record would not fit in a znode (or passes `sizeLimit`); nothing was written. */
export class PayloadTooLargeError extends InvalidArgumentError {
  override readonly code = 'ZKQ_PAYLOAD_TOO_LARGE';
  constructor(
    readonly bytes: number,
    readonly limit: number,
    what = 'job',
  ) {
    super(`${what} is ${bytes} bytes serialized, over the ${limit}-byte limit`, 'data');
  }
}

/** Job data that JSON cannot carry faithfully (functions, BigInt, cycles, symbols...); nothing was written. */
export class InvalidJobDataError extends InvalidArgumentError {
  override readonly code = 'ZKQ_INVALID_JOB_DATA';
  constructor(reason: string, path: string) {
    super(`job data cannot be stored: ${reason} at ${path}`, 'data');
  }
}

/** No job with that id. */
export class JobNotFoundError extends ZkqError {
  constructor(readonly jobId: string) {
    super('ZKQ_JOB_NOT_FOUND', `job ${jobId} not found`);
  }
}

/**
 * The worker no longer owns the job (its claim was revoked as stalled, or
 * another worker claimed it after a session loss): its result was dropped.
 */
export class LostJobError extends ZkqError {
  constructor(readonly jobId: string) {
    super('ZKQ_JOB_LOST', `job ${jobId} is no longer owned by this worker; its result was dropped`);
  }
}

/** A stored node is not a job record zkq can read (foreign or corrupt). */
export class MalformedJobError extends ZkqError {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super('ZKQ_MALFORMED_JOB', `malformed job node ${path}: ${reason}`);
  }
}

/** The job is not in a state that allows the operation (e.g. promote a job that is not delayed). */
export class JobStateError extends ZkqError {
  constructor(
    readonly jobId: string,
    message: string,
  ) {
    super('ZKQ_JOB_STATE', `job ${jobId}: ${message}`);
  }
}

/**
 * The queue's znodes were laid out by another version of zkq; nothing was
 * written. A queue of layout 2 is moved to layout 3 by `zkq migrate <queue>`
 * (the message says so); any other layout must be drained by the zkq that made it.
 */
export class LayoutVersionError extends ZkqError {
  constructor(
    readonly queue: string,
    readonly found: unknown,
  ) {
    super(
      'ZKQ_LAYOUT_VERSION',
      found === 2
        ? `queue '${queue}' has znode layout 2, this zkq needs layout 3: run \`zkq migrate ${queue}\` (no layout-2 worker may run on it)`
        : `queue '${queue}' has znode layout ${JSON.stringify(found)}, this zkq needs layout 3: drain it with the zkq that made it, or obliterate it`,
    );
  }
}

/**
 * `zkq migrate` (migrateQueue) would not move the queue to layout 3 now:
 * workers are registered on it or jobs are claimed (a layout-2 worker may
 * still write them). Nothing was written; `workers` and `claims` say how many
 * were there.
 */
export class MigrationRefusedError extends ZkqError {
  constructor(
    readonly queue: string,
    readonly workers: number,
    readonly claims: number,
  ) {
    super(
      'ZKQ_MIGRATION_REFUSED',
      `queue '${queue}' was not migrated: ${migrationBlockers(workers, claims)} (stop its workers first, or let the migration wait for them)`,
    );
  }
}

/** What keeps a migration from starting, in words: `2 workers registered and 1 job claimed`. */
export function migrationBlockers(workers: number, claims: number): string {
  const parts: string[] = [];
  if (workers > 0) parts.push(`${workers} worker${workers === 1 ? '' : 's'} registered`);
  if (claims > 0) parts.push(`${claims} job${claims === 1 ? '' : 's'} claimed`);
  return parts.join(' and ');
}

/** A job names a parent (`opts.parent`) that does not exist; nothing was written. */
export class MissingParentError extends ZkqError {
  constructor(readonly parentKey: string) {
    super('ZKQ_MISSING_PARENT', `parent job ${parentKey} does not exist`);
  }
}

/** A flow names a custom job id that exists already; a flow is added whole, so nothing was written. */
export class JobExistsError extends ZkqError {
  constructor(
    readonly queue: string,
    readonly jobId: string,
  ) {
    super('ZKQ_JOB_EXISTS', `job ${jobId} exists in queue '${queue}': the flow was not added`);
  }
}

/** A parent asked to wait for its children has none pending: it goes on (not an error to report). */
export class NoPendingChildrenError extends ZkqError {
  constructor(readonly jobId: string) {
    super('ZKQ_NO_PENDING_CHILDREN', `job ${jobId} has no pending children`);
  }
}

/** A parent asked to wait for its children has a child that failed it (failParentOnFailure). */
export class FailedChildrenError extends ZkqError {
  constructor(
    readonly jobId: string,
    readonly reason: string,
  ) {
    super('ZKQ_FAILED_CHILDREN', `job ${jobId} has failed children: ${reason}`);
  }
}
