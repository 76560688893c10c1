/** `zkq add` and `zkq add-bulk`: enqueue jobs. */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { type BulkJob, type Job, type JobsOptions, type Queue, QueueEvents } from '@zkq/producer';
import type { Argv } from 'yargs';
import { connectionOf, type GlobalArgs, integer, positive, prefixOf, withQueue, zooKeeperOptions } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import { plural, printJson, println } from '../output.js';
import { progressBar } from '../progress.js';

export const DEFAULT_BULK_BATCH = 1000;

function parseData(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--data is not valid JSON: ${(err as Error).message}`);
  }
}

export function registerEnqueueCommands(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y
    .command(
      'add <queue> <name>',
      'Add one job and print its id',
      (b) =>
        zooKeeperOptions(
          b
            .positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })
            .positional('name', { type: 'string', demandOption: true, describe: 'Job name' }),
        )
          .option('data', { type: 'string', describe: 'Job data as JSON (default {})' })
          .option('delay', { type: 'number', describe: 'Run no earlier than this many ms from now' })
          .option('priority', { type: 'number', describe: '1 (highest) .. 2097152; 0 = none, before all prioritized' })
          .option('attempts', { type: 'number', describe: 'Total attempts, the first included (default 1)' })
          .option('backoff', { type: 'number', describe: 'Wait between attempts, ms (fixed)' })
          .option('lifo', { type: 'boolean', describe: 'Run before every other waiting job' })
          .option('job-id', {
            type: 'string',
            describe: 'Custom job id; if it exists, nothing is added (a note on stderr, exit 0)',
          })
          .option('wait', {
            type: 'boolean',
            default: false,
            describe: 'Wait until the job finishes and print its result (exit 1 if it failed)',
          })
          .option('timeout', { type: 'number', describe: 'With --wait: give up after this many ms (exit 7)' })
          .option('json', { type: 'boolean', default: false, describe: 'Print the job as JSON' })
          .example('$0 add resize-images thumb --data \'{"id":7}\' --wait', 'Run a job and print its result')
          .example('$0 add emails welcome --data \'{"to":"ada@example.com"}\'', 'Add a job, print its id')
          .example('$0 add reports nightly --delay 60000 --attempts 3 --json', 'A delayed job with retries'),
      async (argv) => {
        const opts: JobsOptions = {};
        if (argv.delay !== undefined) opts.delay = argv.delay;
        if (argv.priority !== undefined) opts.priority = argv.priority;
        if (argv.attempts !== undefined) opts.attempts = argv.attempts;
        if (argv.backoff !== undefined) opts.backoff = argv.backoff;
        if (argv.lifo !== undefined) opts.lifo = argv.lifo;
        if (argv.jobId !== undefined) opts.jobId = argv.jobId;
        const data = parseData(argv.data);
        if (argv.timeout !== undefined) positive(argv.timeout, '--timeout');
        await withQueue(argv, argv.queue, async (queue) => {
          const existed = duplicates(queue);
          if (argv.wait) {
            await addAndWait(queue, argv, argv.name, data, opts, existed);
            return;
          }
          const job = await queue.add(argv.name, data, opts);
          if (existed.has(job.id)) warnExisting(job.id, argv.queue);
          if (argv.json) printJson({ queue: argv.queue, existed: existed.has(job.id), ...job.toJSON() });
          else println(job.id);
        });
      },
    )
    .command(
      'add-bulk <queue>',
      'Add jobs from NDJSON lines {"name","data","opts"} (a file or stdin)',
      (b) =>
        zooKeeperOptions(b.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' }))
          .option('file', { alias: 'f', type: 'string', describe: 'NDJSON file (default: stdin)' })
          .option('batch', {
            type: 'number',
            default: DEFAULT_BULK_BATCH,
            describe: 'Jobs per addBulk call (each is all-or-nothing)',
          })
          .option('json', { type: 'boolean', default: false, describe: 'Print the summary as JSON' })
          .example('$0 add-bulk emails --file jobs.ndjson', 'Add every line of jobs.ndjson')
          .example('seq 1000 | jq -c \'{name:"sq",data:{n:.}}\' | $0 add-bulk squares', 'Add 1000 jobs from a pipe'),
      async (argv) => {
        integer(argv.batch, '--batch');
        if (argv.file === undefined && process.stdin.isTTY) {
          throw new UsageError('give --file <jobs.ndjson> or pipe NDJSON lines into stdin');
        }
        const jobs = await readJobs(argv.file);
        await withQueue(argv, argv.queue, async (queue) => {
          const existed = duplicates(queue);
          const { seconds } = await addInBatches(queue, jobs, argv.batch);
          const added = jobs.length - existed.size;
          const rate = seconds > 0 ? Math.round(added / seconds) : added;
          if (existed.size > 0) {
            process.stderr.write(
              `zkq: ${existed.size} of the jobs already existed in queue ${argv.queue} (same jobId); they were not added again\n`,
            );
          }
          if (argv.json) printJson({ queue: argv.queue, added, existed: existed.size, seconds, rate });
          else println(`added ${plural(added, 'job')} to ${argv.queue} in ${seconds.toFixed(2)} s (${rate} jobs/s)`);
        });
      },
    );
}

/** Ids the queue reports as already there when added (custom jobIds): they were not added again. */
function duplicates(queue: Queue): Set<string> {
  const ids = new Set<string>();
  queue.on('duplicated', (id) => ids.add(id));
  return ids;
}

/** Adding an existing jobId is not an error (exit 0), but it says so. */
function warnExisting(id: string, queue: string): void {
  process.stderr.write(`zkq: job ${id} already exists in queue ${queue}; it was not added again\n`);
}

/** Reads and checks every line before anything is enqueued, so a bad line adds nothing. */
async function readJobs(file: string | undefined): Promise<BulkJob[]> {
  const input = file === undefined ? process.stdin : createReadStream(file);
  const opened = new Promise<void>((resolve, reject) => {
    input.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'ENOENT' ? new UsageError(`cannot read ${file}: no such file`) : err),
    );
    input.once('end', resolve);
  });
  const jobs: BulkJob[] = [];
  let lineNo = 0;
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  const reading = (async () => {
    for await (const line of lines) {
      lineNo++;
      if (line.trim()) jobs.push(parseLine(line, lineNo));
    }
  })();
  await Promise.all([reading, opened]);
  return jobs;
}

function parseLine(line: string, lineNo: number): BulkJob {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (err) {
    throw new UsageError(`line ${lineNo}: not valid JSON (${(err as Error).message})`);
  }
  const j = parsed as { name?: unknown; data?: unknown; opts?: unknown };
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof j.name !== 'string') {
    throw new UsageError(`line ${lineNo}: expected {"name": string, "data": any, "opts": object}`);
  }
  if (j.opts !== undefined && (typeof j.opts !== 'object' || j.opts === null)) {
    throw new UsageError(`line ${lineNo}: "opts" must be an object`);
  }
  return { name: j.name, data: j.data ?? {}, ...(j.opts ? { opts: j.opts as JobsOptions } : {}) };
}

/** Adds `jobs` through addBulk, `batch` at a time, with a progress bar on a terminal. */
export async function addInBatches(
  queue: Queue,
  jobs: BulkJob[],
  batch: number,
  showProgress?: boolean,
): Promise<{ seconds: number }> {
  const bar = progressBar('enqueue', jobs.length, showProgress);
  const started = performance.now();
  try {
    for (let i = 0; i < jobs.length; i += batch) {
      await queue.addBulk(jobs.slice(i, i + batch));
      bar.update(Math.min(jobs.length, i + batch));
    }
  } finally {
    bar.stop();
  }
  return { seconds: (performance.now() - started) / 1000 };
}

/** Adds a job and waits for its outcome: prints the result, or fails with the job's reason. */
async function addAndWait(
  queue: Queue,
  argv: GlobalArgs & { queue: string; json: boolean; timeout: number | undefined },
  name: string,
  data: unknown,
  opts: JobsOptions,
  existed: Set<string>,
): Promise<void> {
  // Listening before adding: the worker may finish the job at once.
  const events = new QueueEvents(argv.queue, { connection: connectionOf(argv), prefix: prefixOf(argv) });
  try {
    await events.waitUntilReady();
    const job: Job = await queue.add(name, data, opts);
    if (existed.has(job.id)) warnExisting(job.id, argv.queue);
    let result: unknown;
    try {
      result = await job.waitUntilFinished(events, argv.timeout);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ZKQ_TIMEOUT') throw err;
      throw new CliError(`job ${job.id} failed: ${(err as Error).message}`);
    }
    if (argv.json) printJson({ queue: argv.queue, id: job.id, state: 'completed', returnvalue: result ?? null });
    else println(result === undefined ? '' : JSON.stringify(result));
  } finally {
    await events.close();
  }
}
