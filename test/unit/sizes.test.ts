/** The shared size rules of a finish: texts cut with a marker on a character boundary, a bounded stack history. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_LOG_BYTES, MAX_LOG_LINE_BYTES, MAX_REASON_BYTES, MAX_STACK_BYTES, MAX_STACKTRACE_BYTES } from '@zkq/core';
import { cutReason, cutText, DEFAULT_KEEP_LOGS, keptLogs, keptStacktrace } from '@zkq/core/internal';

const bytes = (s: string) => Buffer.byteLength(s);

test('a text within its limit is kept as it is', () => {
  assert.equal(cutText('short', 100), 'short');
  assert.equal(cutText('é'.repeat(50), 100), 'é'.repeat(50));
});

test('a longer text is cut within the limit, marked with the bytes cut, never inside a character', () => {
  const text = 'é'.repeat(1000); // 2000 bytes
  const cut = cutText(text, 500);
  assert.ok(bytes(cut) <= 500, `${bytes(cut)} bytes`);
  const m = /^(é*)…\[truncated (\d+) bytes\]$/.exec(cut);
  assert.ok(m, cut.slice(-40));
  assert.equal(bytes(m[1] as string) + Number(m[2]), bytes(text));
  const reason = cutReason('x'.repeat(300 * 1024));
  assert.ok(bytes(reason) <= MAX_REASON_BYTES);
  assert.ok(reason.startsWith('xxx'));
});

test('the stack history keeps the newest first, within its count and its bytes', () => {
  const big = 's'.repeat(40 * 1024);
  const history = keptStacktrace([big], [big, big, big], 10);
  assert.equal(history.length, MAX_STACKTRACE_BYTES / MAX_STACK_BYTES);
  assert.ok(history.reduce((n, s) => n + bytes(s), 0) <= MAX_STACKTRACE_BYTES);
  assert.deepEqual(keptStacktrace(['new'], ['a', 'b', 'c'], 2), ['new', 'a']);
  assert.deepEqual(keptStacktrace(['new'], ['a'], 0), ['new'], 'at least one');
  assert.deepEqual(keptStacktrace([], ['a', 'b']), ['a', 'b']);
});

test('log lines keep the newest, within keepLogs, each cut, and within the bytes of a job', () => {
  assert.deepEqual(keptLogs(['a', 'b'], ['c'], 2), ['b', 'c']);
  assert.deepEqual(keptLogs(['a'], ['b']), ['a', 'b']);
  assert.equal(
    keptLogs(
      [],
      Array.from({ length: 1500 }, (_, i) => String(i)),
    ).length,
    DEFAULT_KEEP_LOGS,
  );
  assert.equal(
    keptLogs(
      [],
      Array.from({ length: 1500 }, (_, i) => String(i)),
      0,
    ).length,
    1500,
    '0: no count',
  );
  const [long] = keptLogs([], ['l'.repeat(100 * 1024)]);
  assert.ok(bytes(long as string) <= MAX_LOG_LINE_BYTES);
  const lines = Array.from({ length: 700 }, (_, i) => `${i} ${'k'.repeat(1024)}`);
  const kept = keptLogs([], lines);
  assert.ok(kept.reduce((n, s) => n + bytes(s), 0) <= MAX_LOG_BYTES);
  assert.equal(kept.at(-1), lines.at(-1));
  assert.deepEqual(kept, lines.slice(-kept.length), 'the newest, in order');
});
