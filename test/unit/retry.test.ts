import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BadVersionError, ConnectionLossError, NoNodeError, RequestTimeoutError, SessionExpiredError } from '@zkq/core';
import { backoffDelay, DEFAULT_RETRY, isRetryable, withRetry } from '@zkq/core/internal';

const fast = { baseDelayMs: 1, maxDelayMs: 2 };

test('withRetry: resolves at once when fn succeeds', async () => {
  let calls = 0;
  const value = await withRetry(async () => {
    calls++;
    return 'ok';
  });
  assert.equal(value, 'ok');
  assert.equal(calls, 1);
});

test('withRetry: retries retryable errors until fn succeeds, passing the attempt number', async () => {
  const seen: number[] = [];
  const value = await withRetry(async (attempt) => {
    seen.push(attempt);
    if (attempt < 2) throw new ConnectionLossError('/x');
    return attempt;
  }, fast);
  assert.equal(value, 2);
  assert.deepEqual(seen, [0, 1, 2]);
});

test('withRetry: gives up after maxAttempts with the last error', async () => {
  let calls = 0;
  await assert.rejects(
    withRetry(
      async () => {
        calls++;
        throw new RequestTimeoutError(10, `/attempt-${calls}`);
      },
      { ...fast, maxAttempts: 3 },
    ),
    (err: unknown) => err instanceof RequestTimeoutError && err.path === '/attempt-3',
  );
  assert.equal(calls, 3);
});

test('withRetry: maxAttempts 1 runs fn once', async () => {
  let calls = 0;
  await assert.rejects(
    withRetry(
      async () => {
        calls++;
        throw new ConnectionLossError();
      },
      { ...fast, maxAttempts: 1 },
    ),
    ConnectionLossError,
  );
  assert.equal(calls, 1);
});

test('withRetry: non-retryable errors pass through on the first attempt', async () => {
  for (const error of [new NoNodeError('/a'), new BadVersionError('/a'), new TypeError('boom')]) {
    let calls = 0;
    await assert.rejects(
      withRetry(async () => {
        calls++;
        throw error;
      }, fast),
      (err: unknown) => err === error,
    );
    assert.equal(calls, 1, `${error.name} must not be retried`);
  }
});

test('withRetry: a custom retryable predicate decides', async () => {
  let calls = 0;
  const value = await withRetry(
    async () => {
      calls++;
      if (calls < 3) throw new NoNodeError('/a');
      return 'found';
    },
    fast,
    (err) => err instanceof NoNodeError,
  );
  assert.equal(value, 'found');
  assert.equal(calls, 3);
});

test('withRetry: stops at the deadline even with attempts left', async () => {
  let calls = 0;
  const started = Date.now();
  await assert.rejects(
    withRetry(
      async () => {
        calls++;
        throw new ConnectionLossError();
      },
      { maxAttempts: 1_000_000, baseDelayMs: 20, maxDelayMs: 40, deadlineMs: 300 },
    ),
    ConnectionLossError,
  );
  const elapsed = Date.now() - started;
  // It never sleeps past the deadline; the slack is for a busy machine's timers.
  assert.ok(elapsed < 300 + 1000, `took ${elapsed} ms`);
  assert.ok(calls >= 2 && calls < 1000, `made ${calls} calls`);
});

test('isRetryable: connection loss, request timeout and session expiry only', () => {
  assert.equal(isRetryable(new ConnectionLossError()), true);
  assert.equal(isRetryable(new RequestTimeoutError(5)), true);
  assert.equal(isRetryable(new SessionExpiredError()), true);
  assert.equal(isRetryable(new NoNodeError()), false);
  assert.equal(isRetryable(new BadVersionError()), false);
  assert.equal(isRetryable(new Error('x')), false);
});

test('backoffDelay: full jitter under an exponential cap bounded by maxDelayMs', () => {
  const o = { ...DEFAULT_RETRY, baseDelayMs: 50, maxDelayMs: 2000 };
  const almostOne = () => 0.999999;
  assert.equal(
    backoffDelay(0, o, () => 0),
    0,
  );
  assert.equal(
    backoffDelay(5, o, () => 0),
    0,
  );
  assert.equal(backoffDelay(0, o, almostOne), 49);
  assert.equal(backoffDelay(1, o, almostOne), 99);
  assert.equal(backoffDelay(3, o, almostOne), 399);
  assert.equal(
    backoffDelay(0, o, () => 0.5),
    25,
  );
  // 50 * 2^6 = 3200 is past the cap.
  assert.equal(backoffDelay(6, o, almostOne), 1999);
  assert.equal(backoffDelay(60, o, almostOne), 1999);
  for (let attempt = 0; attempt < 20; attempt++) {
    const d = backoffDelay(attempt, o);
    assert.ok(Number.isInteger(d) && d >= 0 && d < Math.min(2000, 50 * 2 ** attempt));
  }
});
