/**
 * How big what a finish writes may grow: the rules both front-ends share.
 *
 * A job record must stay under MAX_RECORD_BYTES whatever its processor
 * throws, and an event node under the packet limit whatever it carries, so
 * that no finish is ever refused for its size (a refused finish would leave
 * the job active until its lease ran out, then run it again). Hence:
 * - a failure's reason is cut to MAX_REASON_BYTES and each stack to
 *   MAX_STACK_BYTES, the cut marked `…[truncated N bytes]`;
 * - the stack trace history (one entry per failed attempt, newest first)
 *   keeps `stackTraceLimit` entries and at most MAX_STACKTRACE_BYTES in all,
 *   dropping the oldest;
 * - event values (a `failed` reason, a `completed` return value, progress)
 *   are capped at EVENT_VALUE_LIMIT (events.ts);
 * - log lines (`job.log`) live apart from the record (protocol/logs.ts): the
 *   last `keepLogs` of them, each cut to MAX_LOG_LINE_BYTES and at most
 *   MAX_LOG_BYTES in all (the oldest go first), so logging never makes a
 *   finish too large;
 * - a finish that still does not fit (a return value over the record limit)
 *   fails the job at once with a short reason (`tooLargeReason`).
 */

/** Longest failure reason kept in a record or an event, UTF-8 bytes (longer ones are cut, marked). */
export const MAX_REASON_BYTES = 16 * 1024;
/** Longest single stack trace kept, UTF-8 bytes (longer ones are cut, marked). */
export const MAX_STACK_BYTES = 16 * 1024;
/** Most bytes the stack trace history of a job holds in all (the oldest entries go first). */
export const MAX_STACKTRACE_BYTES = 64 * 1024;
/** Longest log line kept, UTF-8 bytes (longer ones are cut, marked). */
export const MAX_LOG_LINE_BYTES = 16 * 1024;
/** Most bytes of log lines a job keeps in all, in its log node (the oldest lines go first). */
export const MAX_LOG_BYTES = 768 * 1024;
/** Log lines kept when neither the call nor the job's `keepLogs` says (BullMQ keeps all). */
export const DEFAULT_KEEP_LOGS = 1000;
/** Stack traces kept when the job's `stackTraceLimit` does not say. */
export const DEFAULT_STACKTRACE_LIMIT = 10;

/** The marker that ends a cut text. */
export function truncationMarker(cutBytes: number): string {
  return `…[truncated ${cutBytes} bytes]`;
}

/**
 * `text` if it holds at most `max` UTF-8 bytes, else its start cut on a
 * character boundary and followed by the marker, the whole within `max`.
 */
export function cutText(text: string, max: number): string {
  // a string of n UTF-16 units is at most 3n UTF-8 bytes: most texts need no encoding
  if (text.length * 3 <= max) return text;
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return text;
  // the marker's length depends on the count it names: size it for the largest count
  const room = Math.max(0, max - Buffer.byteLength(truncationMarker(buf.length)));
  let end = room;
  while (end > 0 && ((buf[end] as number) & 0xc0) === 0x80) end--; // not inside a character
  return buf.toString('utf8', 0, end) + truncationMarker(buf.length - end);
}

/** A failure reason as stored and reported in events. */
export function cutReason(reason: string): string {
  return cutText(reason, MAX_REASON_BYTES);
}

/**
 * The stack trace history after a failed attempt: its new traces (each cut)
 * before the ones kept so far, at most `limit` entries (at least one) and
 * MAX_STACKTRACE_BYTES in all; the oldest entries go first.
 */
export function keptStacktrace(added: readonly string[], kept: readonly string[], limit?: number): string[] {
  const max = Math.max(limit ?? DEFAULT_STACKTRACE_LIMIT, 1);
  const out: string[] = [];
  let bytes = 0;
  for (const entry of [...added, ...kept]) {
    if (out.length >= max) break;
    const cut = cutText(String(entry), MAX_STACK_BYTES);
    const size = Buffer.byteLength(cut);
    if (out.length > 0 && bytes + size > MAX_STACKTRACE_BYTES) break;
    out.push(cut);
    bytes += size;
  }
  return out;
}

/** The short reason a job fails with when what its finish would write does not fit. */
export function tooLargeReason(what: 'result' | 'failure', detail: string): string {
  return cutReason(`PayloadTooLargeError: ${what} too large to store (${detail}); the job failed without retrying`);
}

/**
 * A job's log lines after `added` are appended: the newest `keep` lines
 * (DEFAULT_KEEP_LOGS when unset; 0 sets no count, as in BullMQ), each cut
 * to MAX_LOG_LINE_BYTES, at most MAX_LOG_BYTES in all; the oldest go first.
 */
export function keptLogs(kept: readonly string[], added: readonly string[], keep?: number): string[] {
  const max = keep === undefined ? DEFAULT_KEEP_LOGS : keep > 0 ? keep : Number.POSITIVE_INFINITY;
  const out: string[] = [];
  let bytes = 0;
  const all = [...kept, ...added];
  for (let i = all.length - 1; i >= 0 && out.length < max; i--) {
    const line = cutText(String(all[i]), MAX_LOG_LINE_BYTES);
    bytes += Buffer.byteLength(line);
    if (bytes > MAX_LOG_BYTES) break;
    out.push(line);
  }
  return out.reverse();
}
