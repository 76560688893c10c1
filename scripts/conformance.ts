/**
 * BullMQ's own shared test suite against zkq's ZooKeeper backend: every
 * Queue, Worker, QueueEvents and FlowProducer the suite builds runs on
 * `createZooKeeperBackend`, through the seam BullMQ's PostgreSQL run uses.
 * Starts a ZooKeeper of its own, runs the test files one at a time (each in
 * its own namespace, killed at its timeout) and prints a table. Conformance
 * gaps are data: exits 0 once it ran, 2 when it cannot run.
 *
 *   npm run conformance -- --bullmq-dir ../bullmq
 *   npm run conformance -- --help      this text
 *   options: --files queue,worker   --json out.json   --timeout 300 (s per file)
 *            --zookeeper host:port (use a running server)   --causes 25
 *            --grep <regexp> (only the tests whose name matches; the others count as skipped)
 *            --skip-cleanup (triage: BullMQ's per-test cleanupQueue pauses and
 *            obliterates nothing, so a backend without them is not failed by
 *            every afterEach; not for the reference numbers)
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startZooKeeper, type ZooKeeperServer } from '@zkq/testing';
import { type FileResult, fileResult, note, readEvents, table, topCauses } from './conformance/results.js';
import { ENV, removeVitestFiles, vitestFiles, writeVitestFiles } from './conformance/vitest-files.js';

/** The BullMQ tag whose suite was measured (it has the pluggable backend seam). */
const BULLMQ_TAG = 'v6.2.0';
/** The shared files: not about Redis or one client library; 691 tests pass on Redis. */
const SHARED_FILES = [
  'async_fifo_queue',
  'bulk',
  'clean',
  'concurrency',
  'connection-closed-error',
  'deduplication',
  'delay',
  'events',
  'flow',
  'getters',
  'job',
  'job_cancellation',
  'job_cancellation_advanced',
  'job_scheduler',
  'job_scheduler_stress',
  'lock_manager',
  'metrics',
  'obliterate',
  'pause',
  'queue',
  'rate_limiter',
  'stalled_jobs',
  'telemetry_interface',
  'worker',
];
const DEFAULT_FILE_TIMEOUT_S = 300;
/** Long enough that a busy machine does not expire sessions; short enough that a leaked session ends soon. */
const SESSION_TIMEOUT_MS = 10_000;
/** After its results are in, vitest may wait on handles a failed test left open: give it this long. */
const EXIT_GRACE_MS = 15_000;
/** A file's output past this is dropped: a worker looping on an error can print gigabytes. */
const LOG_LIMIT_BYTES = 20 * 1024 * 1024;

const OPTIONS = {
  'bullmq-dir': { type: 'string' },
  files: { type: 'string' },
  json: { type: 'string' },
  timeout: { type: 'string', default: String(DEFAULT_FILE_TIMEOUT_S) },
  zookeeper: { type: 'string' },
  causes: { type: 'string', default: '25' },
  'skip-cleanup': { type: 'boolean', default: false },
  grep: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

function fail(lines: string[]): never {
  console.error(lines.join('\n'));
  process.exit(2);
}

/** The usage: this file's header, then how to make the checkout a run needs. */
function usage(): string[] {
  const source = readFileSync(fileURLToPath(import.meta.url), 'utf8');
  const header = /\/\*\*\n([\s\S]*?)\n \*\//.exec(source)?.[1]?.replace(/^ \* ?/gm, '') ?? '';
  return [header, '', 'A checkout, made once:', ...setupCommands('../bullmq', 'clone')];
}

function parseOptions() {
  try {
    return parseArgs({ options: OPTIONS }).values;
  } catch (err) {
    // an unknown option or a missing value: say which, then how to call it
    fail([(err as Error).message, '', ...usage()]);
  }
}

const values = parseOptions();
if (values.help) {
  console.log(usage().join('\n'));
  process.exit(0);
}
const timeoutS = Number(values.timeout);
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail(['--timeout must be a number of seconds > 0']);
if (!values['bullmq-dir']) fail(['--bullmq-dir is missing', '', ...usage()]);
const dir = resolve(values['bullmq-dir']);

function setupCommands(at: string, from: 'clone' | 'install' | 'pretest'): string[] {
  const out: string[] = [];
  if (from === 'clone') out.push(`  git clone --branch ${BULLMQ_TAG} https://github.com/taskforcesh/bullmq.git ${at}`);
  out.push(`  cd ${at}`);
  if (from !== 'pretest') out.push('  npm install --ignore-scripts');
  out.push('  npm run pretest');
  return out;
}

/** Refuses a directory that is not a BullMQ checkout ready to run its suite, saying exactly what to run. */
function preflight(): { version: string; vitest: string } {
  const pkgPath = join(dir, 'package.json');
  const pkg = existsSync(pkgPath)
    ? (JSON.parse(readFileSync(pkgPath, 'utf8')) as { name?: string; version?: string })
    : {};
  if (pkg.name !== 'bullmq' || !existsSync(join(dir, 'tests'))) {
    const at = existsSync(dir) ? join(dir, 'bullmq') : dir;
    fail([`${dir} is not a checkout of BullMQ's repository. Make one:`, ...setupCommands(at, 'clone')]);
  }
  const seam = ['tests/utils/connection-factory.ts', 'src/utils/create-backend.ts'];
  if (seam.some((f) => !existsSync(join(dir, f)))) {
    fail([`BullMQ ${pkg.version} has no pluggable backend (${seam.join(', ')}); check out ${BULLMQ_TAG} or later.`]);
  }
  const vitest = join(dir, 'node_modules', 'vitest', 'vitest.mjs');
  if (!existsSync(vitest)) fail([`${dir} has no dependencies installed. Run:`, ...setupCommands(dir, 'install')]);
  if (!existsSync(join(dir, 'src', 'scripts', 'index.ts'))) {
    fail([`${dir} lacks the generated script sources. Run:`, ...setupCommands(dir, 'pretest')]);
  }
  return { version: pkg.version ?? '?', vitest };
}

function describeCommit(at: string, dirty: boolean): string {
  const args = ['-C', at, 'describe', '--tags', '--always', ...(dirty ? ['--dirty'] : [])];
  try {
    return execFileSync('git', args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function fileNames(): string[] {
  if (!values.files) return SHARED_FILES;
  const names = values.files
    .split(',')
    .map((f) =>
      f
        .trim()
        .replace(/^tests\//, '')
        .replace(/\.test\.ts$/, ''),
    )
    .filter(Boolean);
  const missing = names.filter((n) => !existsSync(join(dir, 'tests', `${n}.test.ts`)));
  if (missing.length) fail([`no such test file in ${dir}/tests: ${missing.map((n) => `${n}.test.ts`).join(', ')}`]);
  return names;
}

const { version, vitest } = preflight();
const files = fileNames();
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const backendEntry = join(repoRoot, 'packages', 'bullmq', 'src', 'index.ts');
const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const logDir = mkdtempSync(join(tmpdir(), 'zkq-conformance-'));
const generated = vitestFiles(runId);
writeVitestFiles(dir, generated, backendEntry);

let server: ZooKeeperServer | undefined;
let child: ChildProcess | undefined;
// Ctrl-C: the test file's process group, the generated files and the server go too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killGroup(child);
    removeVitestFiles(dir, generated);
    process.exit(130);
  });
}

/** Kills a test file's process group: vitest and the workers it started. */
function killGroup(c: ChildProcess | undefined): void {
  if (c?.pid === undefined) return;
  try {
    process.kill(-c.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A log file that keeps the first LOG_LIMIT_BYTES written to it. */
function cappedLog(path: string): { write: (chunk: Buffer) => void; close: () => void } {
  const fd = openSync(path, 'w');
  let written = 0;
  let dropped = 0;
  let open = true;
  return {
    write(chunk) {
      if (!open) return;
      const part = chunk.subarray(0, Math.max(0, LOG_LIMIT_BYTES - written));
      if (part.length) writeSync(fd, part);
      written += part.length;
      dropped += chunk.length - part.length;
    },
    close() {
      if (dropped) writeSync(fd, `\n[${dropped} more bytes of output dropped]\n`);
      open = false;
      closeSync(fd);
    },
  };
}

/** Runs one test file in its own vitest process (and process group), killed at its timeout. */
async function runFile(name: string, zookeeper: string): Promise<FileResult> {
  const events = join(logDir, `${name}.events.ndjson`);
  const log = cappedLog(join(logDir, `${name}.log`));
  const started = Date.now();
  const args = [vitest, 'run', '--config', generated.config, '--no-file-parallelism'];
  args.push(`--reporter=./${generated.reporter}`, '--reporter=default', '--reporter=json');
  args.push(`--outputFile.json=${join(logDir, `${name}.vitest.json`)}`, `tests/${name}.test.ts`);
  if (values.grep) args.push(`--testNamePattern=${values.grep}`);
  const c = spawn(process.execPath, args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NO_COLOR: '1',
      [ENV.zookeeper]: zookeeper,
      [ENV.namespace]: `conformance-${runId}-${name}`,
      [ENV.sessionTimeout]: String(SESSION_TIMEOUT_MS),
      [ENV.events]: events,
      [ENV.skipCleanup]: values['skip-cleanup'] ? '1' : '0',
    },
  });
  child = c;
  c.stdout?.on('data', log.write);
  c.stderr?.on('data', log.write);
  let timedOut = false;
  let endSeen: number | undefined;
  const exitCode = await new Promise<number | null>((done) => {
    const watch = setInterval(() => {
      const now = Date.now();
      if (endSeen === undefined && readEvents(events).some((e) => e.type === 'end')) endSeen = now;
      if (endSeen !== undefined && now - endSeen > EXIT_GRACE_MS) killGroup(c);
      else if (now - started > timeoutS * 1000) {
        timedOut = true;
        killGroup(c);
      }
    }, 1000);
    c.once('exit', (code) => {
      clearInterval(watch);
      // the group may hold processes vitest started (its workers)
      killGroup(c);
      done(code);
    });
  });
  log.close();
  child = undefined;
  return fileResult(name, events, { durationMs: Date.now() - started, timedOut, exitCode });
}

const bullmqCommit = describeCommit(dir, false);
const zkqCommit = describeCommit(repoRoot, true);
console.log(`BullMQ ${version} (${bullmqCommit}) at ${dir}; zkq ${zkqCommit}`);
console.log(`${files.length} file(s), ${timeoutS} s each at most; logs in ${logDir}`);
if (values['skip-cleanup']) console.log("--skip-cleanup: the suite's per-test cleanup does nothing (triage run)");
try {
  let zookeeper = values.zookeeper;
  if (!zookeeper) {
    server = await startZooKeeper();
    zookeeper = server.connectionString;
  }
  console.log(`zookeeper: ${zookeeper}`);
  const results: FileResult[] = [];
  for (const name of files) {
    const r = await runFile(name, zookeeper);
    results.push(r);
    const tail = note(r, timeoutS);
    console.log(
      `${name}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped of ${r.total}${tail ? ` (${tail})` : ''}`,
    );
  }
  console.log(`\n${table(results, timeoutS)}\n`);
  const causes = topCauses(results, Number(values.causes) || 25);
  if (causes.length) {
    console.log('most frequent first errors of failed tests:');
    for (const [cause, n, where] of causes) console.log(`${String(n).padStart(5)}  ${cause}  [${where.join(', ')}]`);
  }
  if (values.json) {
    const report = {
      date: new Date().toISOString(),
      bullmq: { version, commit: bullmqCommit, dir },
      zkq: { commit: zkqCommit },
      fileTimeoutS: timeoutS,
      skipCleanup: values['skip-cleanup'],
      files: results,
    };
    writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nper-test results: ${values.json}`);
  }
} catch (err) {
  console.error('the conformance run could not run:', err);
  process.exitCode = 1;
} finally {
  removeVitestFiles(dir, generated);
  await server?.stop();
}
