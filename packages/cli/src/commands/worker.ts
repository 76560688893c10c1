/**
 * `zkq worker`: the worker daemon. One ZooKeeper session, a thread pool
 * running the processor file, one log line per job event, optional batch
 * start at a barrier and a Prometheus endpoint.
 *
 * Signals: the first SIGTERM/SIGINT stops claiming and lets running jobs
 * finish and record their results, then exits 0; a second one aborts them
 * (their claims end with the session, so other workers run them again) and
 * exits 130.
 */
import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Barrier, openSession, QueueLayout } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker, type WorkerOptions } from '@zkq/worker';
import type { Argv } from 'yargs';
import { checkNodeName, connectionOf, type GlobalArgs, integer, positive, prefixOf } from '../context.js';
import { EXIT, UsageError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import { WorkerMetrics } from '../metrics.js';

/** After a second signal, exit at the latest this long after aborting the running jobs. */
export const FORCED_EXIT_MS = 10_000;

interface WorkerArgs extends GlobalArgs {
  queue: string;
  processor: string;
  concurrency: number;
  threads: number | undefined;
  lockDuration: number | undefined;
  name: string | undefined;
  barrier: string | undefined;
  members: number | undefined;
  barrierTimeout: number | undefined;
  metricsPort: number | undefined;
  metricsHost: string;
  leader: boolean;
}

export function registerWorkerCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'worker <queue>',
    'Run a worker daemon: claim jobs of <queue> and run them with --processor',
    (b) =>
      b
        .positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })
        .option('processor', {
          alias: 'p',
          type: 'string',
          demandOption: true,
          describe: 'JavaScript module whose default export runs a job: async (job) => result',
        })
        .option('concurrency', { alias: 'c', type: 'number', default: 1, describe: 'Jobs run at once' })
        .option('threads', { type: 'number', describe: 'Processor threads (default: CPUs, at most concurrency)' })
        .option('lock-duration', { type: 'number', describe: 'Lease of a running job, ms (default 30000)' })
        .option('name', { type: 'string', describe: 'Worker id (default host-pid-random)' })
        .option('barrier', { type: 'string', describe: 'Claim nothing until --members workers joined this barrier' })
        .option('members', { type: 'number', describe: 'Barrier size (with --barrier)' })
        .option('barrier-timeout', { type: 'number', describe: 'Give up waiting at the barrier after this many ms' })
        .option('metrics-port', {
          type: 'number',
          describe: 'Serve Prometheus metrics on this port (0: any free port)',
        })
        .option('metrics-host', { type: 'string', default: '127.0.0.1', describe: 'Address of the metrics server' })
        .option('leader', {
          type: 'boolean',
          default: true,
          describe: "Take part in the election for the queue's housekeeping (--no-leader: never lead)",
        })
        .implies('barrier', 'members')
        .example('$0 worker emails --processor ./send-email.js --concurrency 10', 'Run jobs of emails')
        .example(
          '$0 worker crunch -p ./crunch.js --barrier batch --members 4 --metrics-port 9464',
          'Start when 4 workers are up; metrics on :9464',
        ),
    async (argv) => runWorker(argv as unknown as WorkerArgs),
  );
}

async function checkArgs(argv: WorkerArgs): Promise<string> {
  integer(argv.concurrency, '--concurrency');
  if (argv.threads !== undefined) integer(argv.threads, '--threads');
  if (argv.lockDuration !== undefined) positive(argv.lockDuration, '--lock-duration');
  if (argv.barrier !== undefined) {
    checkNodeName(argv.barrier, 'barrier');
    integer(argv.members, '--members');
  }
  if (argv.barrierTimeout !== undefined) positive(argv.barrierTimeout, '--barrier-timeout');
  if (argv.metricsPort !== undefined) integer(argv.metricsPort, '--metrics-port', 0);
  const file = resolve(argv.processor);
  try {
    await access(file);
  } catch {
    throw new UsageError(`processor file not found: ${file}`);
  }
  return file;
}

async function runWorker(argv: WorkerArgs): Promise<void> {
  const processor = await checkArgs(argv);
  const connection = connectionOf(argv);
  const opts: WorkerOptions & { leader?: boolean } = {
    connection,
    prefix: prefixOf(argv),
    concurrency: argv.concurrency,
    autorun: false,
    ...(argv.threads !== undefined ? { threads: argv.threads } : {}),
    ...(argv.lockDuration !== undefined ? { lockDuration: argv.lockDuration } : {}),
    ...(argv.name !== undefined ? { name: argv.name } : {}),
    ...(argv.leader ? {} : { leader: false }),
  };
  const worker = new Worker(argv.queue, processor, opts);
  const log = createLogger(argv, 'stdout').child({ queue: argv.queue, worker: worker.id });
  logEvents(worker, log);

  let metrics: WorkerMetrics | undefined;
  let depthQueue: Queue | undefined;
  if (argv.metricsPort !== undefined) {
    depthQueue = new Queue(argv.queue, { connection, prefix: prefixOf(argv) });
    depthQueue.on('error', () => undefined);
    metrics = new WorkerMetrics(worker, depthQueue);
    const port = await metrics.listen(argv.metricsPort, argv.metricsHost);
    log.info({ port, host: argv.metricsHost }, 'metrics server listening');
  }

  const stop = new AbortController();
  let shutdown: Promise<void> | undefined;
  let forced = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!shutdown) {
      log.info({ signal }, 'shutting down: finishing running jobs (signal again to abort them)');
      stop.abort();
      shutdown = worker.close();
    } else if (!forced) {
      forced = true;
      log.warn({ signal }, 'second signal: aborting running jobs');
      void worker.close(true);
      setTimeout(() => process.exit(EXIT.FORCED), FORCED_EXIT_MS).unref();
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  try {
    if (argv.barrier !== undefined) {
      await waitAtBarrier(argv, worker.id, stop.signal, log);
    }
    if (!shutdown) await worker.run();
  } catch (err) {
    if (!shutdown) {
      await worker.close(true).catch(() => undefined);
      await metrics?.close();
      await depthQueue?.close();
      throw err;
    }
  } finally {
    await shutdown;
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  await metrics?.close();
  await depthQueue?.close();
  log.info({ forced }, 'worker stopped');
  process.exitCode = forced ? EXIT.FORCED : EXIT.OK;
}

/** Joins `<queue>/barriers/<name>` on a session of its own and waits for the start. */
async function waitAtBarrier(argv: WorkerArgs, id: string, signal: AbortSignal, log: Logger): Promise<void> {
  const session = await openSession(connectionOf(argv), prefixOf(argv));
  try {
    const path = `${new QueueLayout(argv.queue).barriersDir}/${argv.barrier}`;
    const barrier = new Barrier(session, path, { size: argv.members as number, id });
    log.info({ barrier: argv.barrier, members: argv.members }, 'waiting at barrier');
    await barrier.enter({ signal, ...(argv.barrierTimeout !== undefined ? { timeout: argv.barrierTimeout } : {}) });
    log.info({ barrier: argv.barrier }, 'barrier passed');
  } finally {
    await session.close();
  }
}

/** One log line per job event, with the job id; the logger carries queue and worker. */
function logEvents(worker: Worker, log: Logger): void {
  const started = new Map<string, number>();
  const took = (id: string) => {
    const t0 = started.get(id);
    started.delete(id);
    return t0 === undefined ? undefined : Math.round(performance.now() - t0);
  };
  worker.on('ready', () =>
    log.info({ concurrency: worker.opts.concurrency, threads: worker.opts.threads }, 'worker ready'),
  );
  worker.on('active', (job) => {
    started.set(job.id, performance.now());
    log.info({ jobId: job.id, job: job.name, attempt: job.attemptsStarted }, 'job active');
  });
  worker.on('completed', (job) => log.info({ jobId: job.id, job: job.name, ms: took(job.id) }, 'job completed'));
  worker.on('failed', (job, err) =>
    log.warn(
      {
        jobId: job?.id,
        job: job?.name,
        ms: job ? took(job.id) : undefined,
        attemptsMade: job?.attemptsMade,
        reason: err.message,
      },
      'job failed',
    ),
  );
  worker.on('progress', (job, progress) => log.debug({ jobId: job.id, progress }, 'job progress'));
  worker.on('lost', (job, err) => {
    started.delete(job.id);
    log.warn({ jobId: job.id, reason: err.message }, 'job lost');
  });
  worker.on('stalled', (jobId) => log.warn({ jobId }, 'job stalled'));
  worker.on('drained', () => log.debug('queue drained'));
  worker.on('paused', () => log.info('worker paused'));
  worker.on('resumed', () => log.info('worker resumed'));
  worker.on('error', (err) =>
    log.error({ err: { message: err.message, code: (err as { code?: unknown }).code } }, 'worker error'),
  );
  worker.on('closed', () => log.debug('worker closed'));
}
