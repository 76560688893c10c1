/**
 * Which user-given names the layout can hold: queue names and custom job
 * ids, checked once at the public entry (InvalidArgumentError).
 */
import { InvalidArgumentError } from '../errors.js';

/** Queue directory names, and the CLI's coordination roots (`zkq lock`, `zkq barrier`) beside the queues. */
const RESERVED_QUEUE_NAMES = new Set([
  'meta',
  'jobs',
  'ready',
  'claims',
  'delayed',
  'completed',
  'failed',
  'ids',
  '_locks',
  '_barriers',
]);
/** The longest queue name, in characters. */
const MAX_QUEUE_NAME = 100;
/** Half a UTF-16 pair alone: no UTF-8 for it, so no node name. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const CUSTOM_ID_RE = /^[A-Za-z0-9._:@+=,~-]{1,128}$/;

/**
 * Throws InvalidArgumentError unless `name` is a usable queue name: what
 * BullMQ accepts (any 1-100 characters but ':'; quotes, slashes and control
 * characters too, as its node name encodes them: encodeQueueName), neither
 * `.` nor `..` nor a reserved name.
 */
export function validateQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError('queue name must be a non-empty string', 'name');
  }
  if (
    name.length > MAX_QUEUE_NAME ||
    name.includes(':') ||
    name === '.' ||
    name === '..' ||
    LONE_SURROGATE.test(name)
  ) {
    throw new InvalidArgumentError(
      `invalid queue name ${JSON.stringify(name)}: use 1-${MAX_QUEUE_NAME} characters, no ':' (not . or ..)`,
      'name',
    );
  }
  if (RESERVED_QUEUE_NAMES.has(name)) throw new InvalidArgumentError(`queue name '${name}' is reserved`, 'name');
}

/** Throws InvalidArgumentError unless `id` is a usable custom job id. */
export function validateCustomJobId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !CUSTOM_ID_RE.test(id) || id === '.' || id === '..') {
    throw new InvalidArgumentError(
      `invalid jobId ${JSON.stringify(id)}: use 1-128 characters of A-Z a-z 0-9 . _ : @ + = , ~ - (not . or ..)`,
      'opts.jobId',
    );
  }
  if (/^\d+$/.test(id)) {
    throw new InvalidArgumentError(`custom jobId '${id}' cannot be an integer (those are zkq's own ids)`, 'opts.jobId');
  }
}
