/** Printing results: aligned tables for people, JSON for scripts. */

/**
 * When the reader of stdout goes away (`zkq jobs q | head -3`), there is
 * nobody left to tell anything: end quietly with exit 0, as soon as a write
 * fails with EPIPE (a daemon's log write included, see logger.ts).
 */
export function endOnBrokenPipe(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err;
  if (ending) return;
  ending = true;
  const stop = beforeExit;
  if (!stop) process.exit(0);
  // A process that exits while a worker thread is still loading its processor module can abort
  // inside Node: a daemon stops its threads first (bounded, then exits anyway).
  const timer = setTimeout(() => process.exit(0), BROKEN_PIPE_STOP_MS);
  void stop()
    .catch(() => undefined)
    .finally(() => {
      clearTimeout(timer);
      process.exit(0);
    });
}

/** Longest wait for a daemon to stop its threads after stdout broke, ms. */
const BROKEN_PIPE_STOP_MS = 5000;
let ending = false;
let beforeExit: (() => Promise<unknown>) | undefined;

/** What to stop before a broken stdout ends the process (a daemon's worker and its threads). */
export function stopOnBrokenPipe(stop: () => Promise<unknown>): void {
  beforeExit = stop;
}

/** Installs endOnBrokenPipe on stdout, once, before anything is written. */
export function watchStdout(): void {
  process.stdout.on('error', endOnBrokenPipe);
}

/** Prints `value` as one JSON document. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function println(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** Prints rows as an aligned table under a header; `(none)` when empty. */
export function printTable(columns: string[], rows: string[][]): void {
  if (rows.length === 0) {
    println('(none)');
    return;
  }
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  println(line(columns));
  for (const row of rows) println(line(row));
}

/** Prints `key  value` pairs with the keys aligned. */
export function printPairs(pairs: [string, string][]): void {
  const width = Math.max(0, ...pairs.map(([k]) => k.length));
  for (const [k, v] of pairs) println(`${k.padEnd(width)}  ${v}`);
}

/** `n` and the noun, singular for 1: `1 job`, `3 jobs`, `0 jobs`. */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** A timestamp (ms) as ISO text, or '-'. */
export function time(ms: number | undefined): string {
  return ms ? new Date(ms).toISOString() : '-';
}

/** Compact JSON, cut to `max` characters. */
export function brief(value: unknown, max = 60): string {
  const text = value === undefined ? '-' : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A duration in ms as `1h2m`, `3m4s`, `5.6s` or `78ms`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${Math.floor(s % 60)}s`;
  return `${Math.floor(m / 60)}h${m % 60}m`;
}
