/**
 * One retry helper for the whole library: bounded attempts, exponential
 * backoff with full jitter, and an overall deadline. It retries only the
 * errors it is told are retryable; callers decide which operations are safe
 * to run twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ConnectionLossError, RequestTimeoutError, SessionExpiredError, ThrottledError } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included. Default 5. */
  maxAttempts?: number;
  /** First backoff, ms. Default 50. */
  baseDelayMs?: number;
  /** Largest single backoff, ms. Default 2000. */
  maxDelayMs?: number;
  /** Give up once this much time has passed since the first attempt, ms. Default 30000. */
  deadlineMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = {
  maxAttempts: 5,
  baseDelayMs: 50,
  maxDelayMs: 2000,
  deadlineMs: 30_000,
};

/** Errors after which trying again may succeed (a throttled request was not applied: it may be sent again). */
export function isRetryable(err: unknown): boolean {
  return (
    err instanceof ConnectionLossError ||
    err instanceof RequestTimeoutError ||
    err instanceof SessionExpiredError ||
    err instanceof ThrottledError
  );
}

/** The wait before attempt `attempt + 1` (0-based): full jitter over an exponential cap. */
export function backoffDelay(attempt: number, options: Required<RetryOptions>, random = Math.random): number {
  const cap = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
  return Math.floor(random() * cap);
}

/**
 * Runs `fn` until it resolves, throws a non-retryable error, or the attempts
 * or the deadline run out (then the last error is thrown).
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
  retryable: (err: unknown) => boolean = isRetryable,
): Promise<T> {
  const o = { ...DEFAULT_RETRY, ...options };
  const start = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      const delay = backoffDelay(attempt, o);
      const outOfTime = Date.now() + delay - start >= o.deadlineMs;
      if (!retryable(err) || attempt + 1 >= o.maxAttempts || outOfTime) throw err;
      await sleep(delay);
    }
  }
}
