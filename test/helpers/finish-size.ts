/**
 * What the finish-size tests of both front-ends (zkq's Worker and BullMQ's
 * on the ZooKeeper backend) share: a short lease, the error of a big stack,
 * and the checks that a reason, a stack trace history and log lines stay
 * within their byte limits.
 */
import assert from 'node:assert/strict';
import { MAX_LOG_BYTES, MAX_REASON_BYTES, MAX_STACKTRACE_BYTES } from '@zkq/core';

/** A short lease: a finish that were lost would run the job again within seconds. */
export const FAST = { lockDuration: 2000, stalledInterval: 500 };

/** The UTF-8 length of `s` (0 when there is none). */
export const bytes = (s: string | undefined) => Buffer.byteLength(s ?? '');

/** Waits past a lease of FAST: a job whose finish were lost would have run again by then. */
export function pastALease(): Promise<void> {
  return new Promise((r) => setTimeout(r, FAST.lockDuration + 1000));
}

/** The error of attempt `n`, with a stack of ~40 KB. */
export function bigStackError(n: number): Error {
  const err = new Error(`attempt ${n}`);
  err.stack = `Error: attempt ${n}\n${'    at frame (file.js:1:1)\n'.repeat(1500)}`;
  return err;
}

/** `reason` begins as the error's message did (`start`), is marked cut, and fits MAX_REASON_BYTES. */
export function assertCutReason(reason: string, start: string): void {
  assert.ok(reason.startsWith(start), reason.slice(0, 40));
  assert.match(reason, /…\[truncated \d+ bytes\]$/);
  assert.ok(bytes(reason) <= MAX_REASON_BYTES, `reason ${bytes(reason)} bytes`);
}

/** A stack trace history of at least two stacks, within MAX_STACKTRACE_BYTES in all. */
export function assertStackHistoryBounded(stacks: readonly string[]): void {
  const total = stacks.reduce((n, s) => n + bytes(s), 0);
  assert.ok(total <= MAX_STACKTRACE_BYTES, `history ${total} bytes`);
  assert.ok(stacks.length >= 2, `${stacks.length} stacks kept`);
}

/** Log lines `<i> …` numbered 0 to `count - 1` in order, within MAX_LOG_BYTES in all. */
export function assertNumberedLogs(logs: readonly string[], count: number): void {
  assert.ok(logs.reduce((n, l) => n + bytes(l), 0) <= MAX_LOG_BYTES);
  assert.deepEqual(
    logs.map((l) => Number(l.split(' ')[0])),
    Array.from({ length: count }, (_, i) => i),
    'every line (within keepLogs), in order',
  );
}

/** What a `failed` event of a QueueEvents says. */
export interface FailedEvent {
  jobId: string;
  failedReason: string;
}

/**
 * The `failed` events `events` (a QueueEvents of either front-end) reports
 * once ready, as a list that grows; closed after the test.
 */
export async function failedEventsOf(
  t: { after: (fn: () => unknown) => void },
  events: {
    on(event: 'failed', fn: (e: FailedEvent) => void): unknown;
    waitUntilReady(): Promise<unknown>;
    close(): Promise<unknown>;
  },
): Promise<FailedEvent[]> {
  t.after(() => events.close());
  await events.waitUntilReady();
  const failed: FailedEvent[] = [];
  events.on('failed', (e) => failed.push(e));
  return failed;
}
