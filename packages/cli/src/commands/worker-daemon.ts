/** The worker daemon behind `zkq worker` (see commands/worker.ts for its options and signals). */
import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Worker, type WorkerOptions } from '@zkq/worker';
import { checkNodeName, connectionOf, integer, positive, prefixOf } from '../context.js';
import { EXIT, UsageError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import { WorkerMetrics } from '../metrics.js';
import { stopOnBrokenPipe } from '../output.js';
import type { WorkerArgs } from './worker.js';

/** After a second signal, exit at the latest this long after aborting the running jobs. */
export const FORCED_EXIT_MS = 10_000;

async function checkArgs(argv: WorkerArgs): Promise<string> {
  integer(argv.concurrency, '--concurrency');
  if (argv.threads !== undefined) integer(argv.threads, '--threads');
  if (argv.lockDuration !== undefined) positive(argv.lockDuration, '--lock-duration');
  if (argv.stalledInterval !== undefined) positive(argv.stalledInterval, '--stalled-interval');
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

export async function runWorker(argv: WorkerArgs): Promise<void> {
  const processor = await checkArgs(argv);
  const connection = connectionOf(argv);
  const opts: WorkerOptions = {
    connection,
    prefix: prefixOf(argv),
    concurrency: argv.concurrency,
    autorun: false,
    ...(argv.threads !== undefined ? { threads: argv.threads } : {}),
    ...(argv.lockDuration !== undefined ? { lockDuration: argv.lockDuration } : {}),
    ...(argv.name !== undefined ? { name: argv.name } : {}),
    ...(argv.stalledInterval !== undefined ? { stalledInterval: argv.stalledInterval } : {}),
    ...(argv.housekeeping ? {} : { housekeeping: false }),
    // Batch start: the Worker claims nothing until `members` workers joined `<queue>/barriers/<name>`.
    ...(argv.barrier !== undefined
      ? {
          barrier: {
            name: argv.barrier,
            size: argv.members as number,
            ...(argv.barrierTimeout !== undefined ? { timeout: argv.barrierTimeout } : {}),
          },
        }
      : {}),
  };
  const worker = new Worker(argv.queue, processor, opts);
  stopOnBrokenPipe(() => worker.close(true));
  const log = createLogger(argv, 'stdout').child({ queue: argv.queue, worker: worker.id });
  logEvents(worker, log);

  let metrics: WorkerMetrics | undefined;
  if (argv.metricsPort !== undefined) {
    metrics = new WorkerMetrics(worker);
    const port = await metrics.listen(argv.metricsPort, argv.metricsHost);
    log.info({ port, host: argv.metricsHost }, 'metrics server listening');
  }

  let shutdown: Promise<void> | undefined;
  let forced = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!shutdown) {
      log.info({ signal }, 'shutting down: finishing running jobs (signal again to abort them)');
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
    if (!shutdown) await worker.run();
  } catch (err) {
    if (!shutdown) {
      await worker.close(true).catch(() => undefined);
      await metrics?.close();
      throw err;
    }
  } finally {
    await shutdown;
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  await metrics?.close();
  log.info({ forced }, 'worker stopped');
  process.exitCode = forced ? EXIT.FORCED : EXIT.OK;
}

/** One log line per job event, with the job id; the logger carries queue and worker. */
function logEvents(worker: Worker, log: Logger): void {
  const started = new Map<string, number>();
  const took = (id: string) => {
    const t0 = started.get(id);
    started.delete(id);
    return t0 === undefined ? undefined : Math.round(performance.now() - t0);
  };
  worker.on('barrierPassed', () => log.info({ barrier: worker.opts.barrier?.name }, 'barrier passed'));
  worker.on('ready', () => {
    if (worker.opts.barrier)
      log.info({ barrier: worker.opts.barrier.name, members: worker.opts.barrier.size }, 'waiting at barrier');
  });
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
