/** Retry delays: BullMQ's built-in `fixed` and `exponential` strategies, jitter, and custom strategies. */
import type { BackoffOptions, Job } from '@zkq/core';

/** A custom strategy (WorkerOptions.settings.backoffStrategy): ms to wait, or -1 to fail now. */
export type BackoffStrategy = (attemptsMade: number, type?: string, err?: Error, job?: Job) => number | Promise<number>;

export function normalizeBackoff(backoff: number | BackoffOptions | undefined): BackoffOptions | undefined {
  if (backoff === undefined) return undefined;
  return typeof backoff === 'number' ? { type: 'fixed', delay: backoff } : backoff;
}

/**
 * The wait before the next attempt, ms, after `attemptsMade` failed attempts;
 * -1 means do not retry.
 */
export async function backoffDelay(
  backoff: BackoffOptions | undefined,
  attemptsMade: number,
  err: Error,
  job: Job,
  custom?: BackoffStrategy,
  random = Math.random,
): Promise<number> {
  if (!backoff) return 0;
  const base = backoff.delay ?? 0;
  let delay: number;
  if (backoff.type === 'fixed') delay = base;
  else if (backoff.type === 'exponential') delay = base * 2 ** Math.max(0, attemptsMade - 1);
  else if (custom) return custom(attemptsMade, backoff.type, err, job);
  else return -1;
  const jitter = backoff.jitter ?? 0;
  return jitter > 0 ? Math.round(delay * (1 - jitter) + random() * delay * jitter) : delay;
}
