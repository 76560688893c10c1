/**
 * Results of one BullMQ test file, read from the events the generated
 * reporter streamed: the final list when the file ran to its end, else the
 * tests that finished plus the collected ones that never did (timeouts).
 */
import { existsSync, readFileSync } from 'node:fs';

export type Status = 'passed' | 'failed' | 'skipped' | 'timeout';

export interface TestOutcome {
  name: string;
  status: Status;
  /** First line of the first error (the test's own, else its hook's). */
  error?: string;
  /** First lines of every error, when there were several (a test's and its afterEach's). */
  errors?: string[];
}

export interface FileResult {
  file: string;
  passed: number;
  failed: number;
  skipped: number;
  total: number;
  durationMs: number;
  /** The file was killed at its timeout. */
  timedOut: boolean;
  /** The file failed as a whole (import error, collection failure, no results). */
  fileError?: string;
  /** Errors outside any test (unhandled rejections and exceptions), first lines. */
  unhandled: string[];
  tests: TestOutcome[];
}

interface Reported {
  id: string;
  name: string;
  state: 'passed' | 'failed' | 'skipped' | 'pending';
  mode?: string;
  errors: string[];
  suiteErrors?: string[];
}

type Event =
  | { type: 'collected'; tests: { id: string; name: string }[] }
  | ({ type: 'result' } & Reported)
  | { type: 'module'; errors: string[]; tests: Reported[] }
  | { type: 'end'; reason: string; unhandled: string[] };

export function readEvents(path: string): Event[] {
  if (!existsSync(path)) return [];
  const events: Event[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as Event);
    } catch {
      // a line cut by a kill
    }
  }
  return events;
}

/** Whether the run reported its end (vitest may still wait on open handles after that). */
export function ended(path: string): boolean {
  return readEvents(path).some((e) => e.type === 'end');
}

function toOutcome(r: Reported): TestOutcome {
  let status: Status;
  let errors = r.errors;
  if (r.state === 'passed') status = 'passed';
  else if (r.state === 'failed') status = 'failed';
  else if (r.state === 'pending') status = 'timeout';
  else if (r.mode === 'skip' || r.mode === 'todo' || !r.suiteErrors?.length) status = 'skipped';
  else {
    // not run because a beforeAll of its suite failed: a failure, not a skip
    status = 'failed';
    errors = r.suiteErrors;
  }
  const out: TestOutcome = { name: r.name, status };
  if (status === 'failed' || status === 'timeout') {
    out.error = errors[0] ?? (status === 'timeout' ? 'did not finish before the file timeout' : 'failed (no message)');
    if (errors.length > 1) out.errors = errors;
  }
  return out;
}

export function fileResult(
  file: string,
  eventsPath: string,
  run: { durationMs: number; timedOut: boolean; exitCode: number | null },
): FileResult {
  const events = readEvents(eventsPath);
  const module = events.find((e) => e.type === 'module');
  const end = events.find((e) => e.type === 'end');
  let tests: TestOutcome[];
  let fileError: string | undefined;
  if (module) {
    tests = module.tests.map(toOutcome);
    if (module.errors.length) fileError = module.errors[0];
  } else {
    const done = new Map<string, Reported>();
    for (const e of events) if (e.type === 'result') done.set(e.id, e);
    const collected = events.find((e) => e.type === 'collected');
    tests = (collected?.tests ?? []).map((t) => {
      const r = done.get(t.id);
      return r && r.state !== 'pending'
        ? toOutcome(r)
        : { name: t.name, status: 'timeout' as const, error: 'did not finish before the file timeout' };
    });
    if (!collected) {
      fileError = run.timedOut
        ? 'timed out before its tests were collected'
        : `vitest exited (code ${run.exitCode}) without results`;
    }
  }
  const count = (s: Status) => tests.filter((t) => t.status === s).length;
  return {
    file,
    passed: count('passed'),
    failed: count('failed') + count('timeout'),
    skipped: count('skipped'),
    total: tests.length,
    durationMs: run.durationMs,
    timedOut: run.timedOut,
    ...(fileError ? { fileError } : {}),
    unhandled: end?.unhandled ?? [],
    tests,
  };
}

/** An error's first line with ids, numbers and quoted values blurred, so like failures group together. */
export function causeOf(error: string): string {
  return error
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
    .replace(/\b\d+(\.\d+)?\b/g, 'N')
    .replace(/'[^']{0,80}'|"[^"]{0,80}"/g, "'…'")
    .slice(0, 160);
}

/** Failures grouped by cause, largest first: [cause, count, files]. */
export function topCauses(results: FileResult[], limit: number): [string, number, string[]][] {
  const groups = new Map<string, { n: number; files: Set<string> }>();
  for (const r of results) {
    for (const t of r.tests) {
      if (t.status !== 'failed' && t.status !== 'timeout') continue;
      const key = causeOf(t.error ?? '');
      const g = groups.get(key) ?? { n: 0, files: new Set<string>() };
      g.n++;
      g.files.add(r.file);
      groups.set(key, g);
    }
  }
  return [...groups.entries()]
    .sort((a, b) => b[1].n - a[1].n)
    .slice(0, limit)
    .map(([cause, g]) => [cause, g.n, [...g.files]]);
}

/** What a file's row notes besides its counts. */
export function note(r: FileResult, timeoutS: number): string {
  const parts: string[] = [];
  if (r.timedOut) parts.push(`killed at ${timeoutS} s`);
  if (r.fileError) parts.push(`file error: ${r.fileError.slice(0, 100)}`);
  if (r.unhandled.length) parts.push(`${r.unhandled.length} unhandled error(s)`);
  return parts.join('; ');
}

/** The per-file table with totals. */
export function table(results: FileResult[], timeoutS: number): string {
  const sum = (k: 'passed' | 'failed' | 'skipped' | 'total') => results.reduce((n, r) => n + r[k], 0);
  const rows = [
    ['file', 'passed', 'failed', 'skipped', 'total', 'time', 'note'],
    ...results.map((r) => [
      r.file,
      String(r.passed),
      String(r.failed),
      String(r.skipped),
      String(r.total),
      `${Math.round(r.durationMs / 1000)} s`,
      note(r, timeoutS),
    ]),
    ['TOTAL', String(sum('passed')), String(sum('failed')), String(sum('skipped')), String(sum('total')), '', ''],
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === 0 || i === r.length - 1 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), ...rows.slice(1, -1).map(line), '-'.repeat(60), line(rows.at(-1)!)].join('\n');
}

// npm install rewrites BullMQ's lock file, so only zkq's tree is checked for edits
