/**
 * `zkq demo`: the whole system in one command. Starts a local ZooKeeper,
 * starts worker daemons (`zkq worker` child processes) that batch-start at a
 * barrier, enqueues jobs, waits until every job has finished, prints the
 * throughput and each worker's share, and shuts everything down.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type BulkJob, Queue } from '@zkq/producer';
import type { Argv } from 'yargs';
import { type GlobalArgs, integer, namespaceOption } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { plural, printJson, println } from '../output.js';
import { progressBar } from '../progress.js';
import { startDevServer } from './dev-server.js';
import { addInBatches } from './enqueue.js';
import { liveWorkers } from './inspect.js';

const QUEUE = 'demo';
const BARRIER = 'demo';
const BATCH = 500;
const JOIN_TIMEOUT_MS = 120_000;
/** Give up when no job finished for this long. */
const STALL_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;
const POLL_MS = 200;
const SOURCE = import.meta.url.endsWith('.ts');
const BIN = fileURLToPath(new URL(SOURCE ? '../bin.ts' : '../bin.js', import.meta.url));
export const DEMO_PROCESSOR = fileURLToPath(new URL('../../../../examples/processors/demo.js', import.meta.url));

interface DemoArgs extends GlobalArgs {
  jobs: number;
  workers: number;
  concurrency: number;
  processor: string;
  rounds: number;
  failEvery: number;
  install: boolean;
  json: boolean;
}

/** A worker child process and the last lines it printed. */
class DemoWorker {
  readonly child: ChildProcess;
  readonly tail: string[] = [];
  readonly exited: Promise<number>;

  constructor(
    readonly id: string,
    args: string[],
  ) {
    this.child = spawn(process.execPath, [...process.execArgv, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        this.tail.push(line);
        if (this.tail.length > 20) this.tail.shift();
      });
    }
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
    );
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  failure(what: string): CliError {
    return new CliError(`${this.id} ${what}; its last output:\n${this.tail.join('\n')}`);
  }

  /** SIGTERM, then SIGKILL if it has not exited in time; resolves with the exit code. */
  async stop(): Promise<number> {
    if (!this.running) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export function registerDemoCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'demo',
    'Start ZooKeeper and workers, run jobs through them, print the throughput',
    (b) =>
      namespaceOption(b)
        .option('jobs', { alias: 'n', type: 'number', default: 3000, describe: 'Jobs to run' })
        .option('workers', { alias: 'w', type: 'number', default: 2, describe: 'Worker daemons' })
        .option('concurrency', { type: 'number', default: 16, describe: 'Jobs at once per worker' })
        .option('processor', { type: 'string', default: DEMO_PROCESSOR, describe: 'Processor file' })
        .option('rounds', { type: 'number', default: 200, describe: 'SHA-256 rounds per job (the demo processor)' })
        .option('fail-every', { type: 'number', default: 0, describe: 'Make every Nth job fail (0: none)' })
        .option('install', {
          type: 'boolean',
          default: true,
          describe: 'Install ZooKeeper when it is missing (as root: apt-get); --no-install: fail instead',
        })
        .option('json', { type: 'boolean', default: false, describe: 'Print the summary as JSON' })
        .example('$0 demo', '3000 jobs on 2 workers')
        .example('$0 demo --jobs 20000 --workers 4', 'A bigger run'),
    async (argv) => runDemo(argv as unknown as DemoArgs),
  );
}

async function runDemo(argv: DemoArgs): Promise<void> {
  integer(argv.jobs, '--jobs');
  integer(argv.workers, '--workers');
  integer(argv.concurrency, '--concurrency');
  integer(argv.rounds, '--rounds', 0);
  integer(argv.failEvery, '--fail-every', 0);
  if (!existsSync(argv.processor)) throw new UsageError(`processor file not found: ${argv.processor}`);
  const say = (line: string) => {
    if (!argv.json) println(`demo: ${line}`);
  };

  say('starting ZooKeeper...');
  const server = await startDevServer({ port: 0, install: argv.install });
  const zk = server.connectionString;
  say(`ZooKeeper is serving at ${zk}`);
  const workers: DemoWorker[] = [];
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = signal;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const queue = new Queue(QUEUE, { connection: { connectionString: zk }, prefix: argv.namespace });
  queue.on('error', () => undefined);
  try {
    for (let i = 1; i <= argv.workers; i++) {
      const id = `demo-worker-${i}`;
      workers.push(new DemoWorker(id, workerArgs(argv, zk, id)));
    }
    const session = await queue.waitUntilReady();
    const check = () => {
      if (interrupted) throw new CliError(`interrupted by ${interrupted}`, EXIT.FORCED);
      const dead = workers.find((w) => !w.running);
      if (dead) throw dead.failure('exited early');
    };
    await until(async () => (await liveWorkers(session, QUEUE)).length >= argv.workers, JOIN_TIMEOUT_MS, check);
    say(`${argv.workers} workers joined barrier '${BARRIER}' and started`);

    const started = performance.now();
    const { seconds: enqueueSecs } = await addInBatches(queue, demoJobs(argv), BATCH, argv.json ? false : undefined);
    say(`enqueued ${plural(argv.jobs, 'job')} in ${enqueueSecs.toFixed(2)} s (${rate(argv.jobs, enqueueSecs)} jobs/s)`);

    const counts = await waitForAll(queue, argv, check);
    const seconds = (performance.now() - started) / 1000;
    const shares = await perWorker(queue);
    const stopCodes = await Promise.all(workers.map((w) => w.stop()));
    const summary = {
      zookeeper: zk,
      jobs: argv.jobs,
      workers: argv.workers,
      completed: counts.completed,
      failed: counts.failed,
      seconds: Number(seconds.toFixed(3)),
      jobsPerSecond: rate(argv.jobs, seconds),
      enqueueSeconds: Number(enqueueSecs.toFixed(3)),
      perWorker: shares,
      workerExitCodes: Object.fromEntries(workers.map((w, i) => [w.id, stopCodes[i]])),
    };
    if (argv.json) printJson(summary);
    else printSummary(summary);
    const bad = workers.find((_, i) => stopCodes[i] !== 0);
    if (bad) throw bad.failure(`exited with code ${stopCodes[workers.indexOf(bad)]} on SIGTERM`);
    say('workers stopped cleanly');
  } finally {
    await queue.close();
    await Promise.all(workers.map((w) => w.stop()));
    await server.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    say('ZooKeeper stopped');
  }
}

function workerArgs(argv: DemoArgs, zk: string, id: string): string[] {
  return [
    'worker',
    QUEUE,
    '--processor',
    argv.processor,
    '--zk',
    zk,
    '--namespace',
    argv.namespace,
    '--name',
    id,
    '--concurrency',
    String(argv.concurrency),
    '--threads',
    '1',
    '--barrier',
    BARRIER,
    '--members',
    String(argv.workers),
    '--log-level',
    'warn',
    '--log-format',
    'json',
  ];
}

function demoJobs(argv: DemoArgs): BulkJob[] {
  return Array.from({ length: argv.jobs }, (_, i) => ({
    name: 'demo',
    data: { n: i, rounds: argv.rounds, ...(argv.failEvery && (i + 1) % argv.failEvery === 0 ? { fail: true } : {}) },
    opts: { removeOnComplete: false, removeOnFail: false },
  }));
}

function rate(n: number, seconds: number): number {
  return seconds > 0 ? Math.round(n / seconds) : n;
}

/** Polls `done` until true; `check` throws to give up early. */
async function until(done: () => Promise<boolean>, timeoutMs: number, check: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    check();
    if (await done()) return;
    if (Date.now() > deadline) throw new CliError(`workers did not all start within ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
}

/** Waits until completed + failed reaches the job count, with a progress bar on a terminal. */
async function waitForAll(
  queue: Queue,
  argv: DemoArgs,
  check: () => void,
): Promise<{ completed: number; failed: number }> {
  const bar = progressBar('process', argv.jobs, !argv.json && process.stderr.isTTY === true);
  let last = -1;
  let lastChange = Date.now();
  try {
    for (;;) {
      check();
      const c = await queue.getJobCounts('completed', 'failed');
      const done = (c.completed ?? 0) + (c.failed ?? 0);
      bar.update(done);
      if (done >= argv.jobs) return { completed: c.completed ?? 0, failed: c.failed ?? 0 };
      if (done !== last) {
        last = done;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > STALL_TIMEOUT_MS) {
        throw new CliError(`no job finished for ${STALL_TIMEOUT_MS / 1000} s (${done}/${argv.jobs} done)`);
      }
      await sleep(POLL_MS);
    }
  } finally {
    bar.stop();
  }
}

async function perWorker(queue: Queue): Promise<Record<string, number>> {
  const jobs = await queue.getJobs(['completed'], 0, -1);
  const shares: Record<string, number> = {};
  for (const job of jobs) {
    const by = job.processedBy ?? 'unknown';
    shares[by] = (shares[by] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(shares).sort(([a], [b]) => a.localeCompare(b)));
}

function printSummary(s: {
  jobs: number;
  completed: number;
  failed: number;
  seconds: number;
  jobsPerSecond: number;
  perWorker: Record<string, number>;
}): void {
  println(
    `demo: ${plural(s.jobs, 'job')} done in ${s.seconds.toFixed(2)} s (${s.jobsPerSecond} jobs/s): ${s.completed} completed, ${s.failed} failed`,
  );
  println('demo: completed per worker:');
  const width = Math.max(...Object.keys(s.perWorker).map((k) => k.length));
  for (const [id, n] of Object.entries(s.perWorker)) {
    const pct = s.completed ? ((100 * n) / s.completed).toFixed(1) : '0.0';
    println(`  ${id.padEnd(width)}  ${String(n).padStart(7)}  ${pct.padStart(5)}%`);
  }
}
