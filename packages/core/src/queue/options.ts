/** Validation of job options at the public entry (Queue.add/addBulk), once. */
import { InvalidArgumentError } from '../errors.js';
import { MAX_PRIORITY, validateCustomJobId, validateQueueName } from './layout.js';
import type { BackoffOptions, DeduplicationOptions, JobsOptions, KeepJobs, ParentOptions } from './types.js';

function fail(message: string, argument: string): never {
  throw new InvalidArgumentError(message, argument);
}

/** Longest delay, ms: due times stay 13-digit numbers (the delayed pointer's name). */
export const MAX_DELAY_MS = 100 * 365.25 * 24 * 3600 * 1000;

function nonNegative(v: unknown, name: string): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) {
    fail(`${name} must be a finite number >= 0`, name);
  }
}

function keep(v: unknown, name: string): void {
  if (v === undefined || typeof v === 'boolean') return;
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < 0) fail(`${name} must be true/false, a count >= 0, or { age, count }`, name);
    return;
  }
  if (typeof v !== 'object' || v === null) fail(`${name} must be true/false, a count >= 0, or { age, count }`, name);
  const k = v as KeepJobs;
  nonNegative(k.age, `${name}.age`);
  nonNegative(k.count, `${name}.count`);
  nonNegative(k.limit, `${name}.limit`);
}

function backoff(v: unknown): void {
  if (v === undefined) return;
  if (typeof v === 'number') {
    nonNegative(v, 'opts.backoff');
    return;
  }
  const b = v as BackoffOptions;
  if (typeof v !== 'object' || v === null || typeof b.type !== 'string' || !b.type) {
    fail("opts.backoff must be ms or { type: 'fixed' | 'exponential' | custom, delay }", 'opts.backoff');
  }
  nonNegative(b.delay, 'opts.backoff.delay');
  if (b.jitter !== undefined && (typeof b.jitter !== 'number' || b.jitter < 0 || b.jitter > 1)) {
    fail('opts.backoff.jitter must be between 0 and 1', 'opts.backoff.jitter');
  }
}

/** Longest deduplication id, characters (its key's node name holds it URI-encoded). */
export const MAX_DEDUP_ID_LENGTH = 1000;

/** A UTF-16 surrogate that is not half of a pair (with `u`, a pair reads as one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

const DEDUP_FLAGS = ['extend', 'replace', 'reschedule', 'keepLastIfActive'] as const;

/** Throws InvalidArgumentError unless `d` is a usable `opts.deduplication` (BullMQ's DeduplicationOptions). */
export function validateDeduplication(d: unknown, name = 'opts.deduplication'): asserts d is DeduplicationOptions {
  if (typeof d !== 'object' || d === null || Array.isArray(d)) {
    fail(`${name} must be { id, ttl?, extend?, replace?, reschedule?, keepLastIfActive? }`, name);
  }
  const o = d as DeduplicationOptions;
  if (typeof o.id !== 'string' || o.id.length === 0 || o.id.length > MAX_DEDUP_ID_LENGTH) {
    fail(`${name}.id must be a non-empty string of at most ${MAX_DEDUP_ID_LENGTH} characters`, `${name}.id`);
  }
  // its key's node name holds it URI-encoded, and half a surrogate pair has no UTF-8 encoding
  if (LONE_SURROGATE.test(o.id))
    fail(`${name}.id must be well-formed UTF-16 (it holds a lone surrogate)`, `${name}.id`);
  if (o.ttl !== undefined && (typeof o.ttl !== 'number' || !Number.isFinite(o.ttl) || o.ttl <= 0)) {
    fail(`${name}.ttl must be a number of ms > 0`, `${name}.ttl`);
  }
  for (const flag of DEDUP_FLAGS) {
    if (o[flag] !== undefined && typeof o[flag] !== 'boolean')
      fail(`${name}.${flag} must be a boolean`, `${name}.${flag}`);
  }
}

/** A child's failure policies (BullMQ's): at most one may be set. */
export const PARENT_POLICIES = [
  'failParentOnFailure',
  'continueParentOnFailure',
  'ignoreDependencyOnFailure',
  'removeDependencyOnFailure',
] as const;

/** The queue name of a parent's `queue`: a name, or BullMQ's qualified `<prefix>:<queue>` (prefixes have no ':'). */
export function parentQueueName(queue: string): string {
  return queue.slice(queue.lastIndexOf(':') + 1);
}

/** Throws InvalidArgumentError unless `p` is a usable `opts.parent` ({ id, queue }). */
export function validateParent(p: unknown, name = 'opts.parent'): asserts p is ParentOptions {
  if (typeof p !== 'object' || p === null || Array.isArray(p)) fail(`${name} must be { id, queue }`, name);
  const o = p as ParentOptions;
  validateJobId(o.id, `${name}.id`);
  if (typeof o.queue !== 'string') fail(`${name}.queue must be a queue name (or <prefix>:<queue>)`, `${name}.queue`);
  try {
    validateQueueName(parentQueueName(o.queue));
  } catch (err) {
    fail(`${name}.queue: ${(err as Error).message}`, `${name}.queue`);
  }
}

function policies(o: JobsOptions): void {
  const set = PARENT_POLICIES.filter((k) => {
    if (o[k] !== undefined && typeof o[k] !== 'boolean') fail(`opts.${k} must be a boolean`, `opts.${k}`);
    return o[k] === true;
  });
  if (set.length > 1) fail(`opts.${set.join(' and opts.')} cannot be combined`, `opts.${set[1]}`);
}

/** Throws InvalidArgumentError for the first invalid option. */
export function validateJobOptions(opts: unknown): asserts opts is JobsOptions {
  if (opts === undefined) return;
  if (typeof opts !== 'object' || opts === null) fail('job options must be an object', 'opts');
  const o = opts as JobsOptions;
  if (o.jobId !== undefined) validateCustomJobId(o.jobId);
  if (o.deduplication !== undefined) validateDeduplication(o.deduplication);
  if (o.parent !== undefined) {
    validateParent(o.parent);
    if (o.deduplication !== undefined)
      fail('opts.deduplication cannot be combined with opts.parent', 'opts.deduplication');
  }
  policies(o);
  nonNegative(o.delay, 'opts.delay');
  if (typeof o.delay === 'number' && o.delay > MAX_DELAY_MS) {
    fail(`opts.delay must be at most ${MAX_DELAY_MS} ms (100 years)`, 'opts.delay');
  }
  nonNegative(o.timestamp, 'opts.timestamp');
  if (o.priority !== undefined && (!Number.isInteger(o.priority) || o.priority < 0 || o.priority > MAX_PRIORITY)) {
    fail(`opts.priority must be an integer from 0 to ${MAX_PRIORITY}`, 'opts.priority');
  }
  if (o.attempts !== undefined && (!Number.isInteger(o.attempts) || o.attempts < 1)) {
    fail('opts.attempts must be an integer >= 1', 'opts.attempts');
  }
  if (o.lifo !== undefined && typeof o.lifo !== 'boolean') fail('opts.lifo must be a boolean', 'opts.lifo');
  if (o.lifo && o.priority) fail('opts.lifo cannot be combined with opts.priority', 'opts.lifo');
  backoff(o.backoff);
  keep(o.removeOnComplete, 'opts.removeOnComplete');
  keep(o.removeOnFail, 'opts.removeOnFail');
  if (o.telemetry !== undefined) {
    const tm = o.telemetry;
    if (typeof tm !== 'object' || tm === null)
      fail('opts.telemetry must be { metadata, omitContext }', 'opts.telemetry');
    if (tm.metadata !== undefined && typeof tm.metadata !== 'string')
      fail('opts.telemetry.metadata must be a string', 'opts.telemetry.metadata');
    if (tm.omitContext !== undefined && typeof tm.omitContext !== 'boolean')
      fail('opts.telemetry.omitContext must be a boolean', 'opts.telemetry.omitContext');
  }
  for (const k of ['keepLogs', 'stackTraceLimit', 'sizeLimit'] as const) {
    const v = o[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 0)) fail(`opts.${k} must be an integer >= 0`, `opts.${k}`);
  }
}

/** Throws InvalidArgumentError unless `name` is a usable job name. */
export function validateJobName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length > 1000) {
    fail('job name must be a string of at most 1000 characters', 'name');
  }
}

/**
 * Throws InvalidArgumentError unless `id` could name a job (a lookup, not a
 * new id): a non-empty string that is a valid node name (no `/`, not `.` or
 * `..`, no control characters). Such an id may still not exist.
 */
export function validateJobId(id: unknown, argument = 'jobId'): asserts id is string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
  if (typeof id !== 'string' || id === '' || id === '.' || id === '..' || /[/\u0000-\u001f\u007f]/.test(id)) {
    fail(`${argument} must be a job id: a non-empty string without '/', not '.' or '..'`, argument);
  }
}
