/**
 * Queue administration: pause, resume, retry, promote, clean, drain,
 * remove, obliterate, migrate (a queue of layout 2 to layout 3, through a
 * raw session: a Queue refuses to open it). Each acts on a queue that exists (its `meta` node, see
 * the layout) and creates nothing otherwise: a typo is QueueNotFoundError
 * (exit 8), as for the commands that only read. `pause` and `resume` take
 * `--create`, to set the flag of a queue before its first job. Commands
 * whose Queue/Job method the installed library lacks fail with
 * NotSupportedError (exit 6) before touching anything.
 */
import { createInterface } from 'node:readline/promises';
import {
  DEFAULT_MIGRATE_TIMEOUT_MS,
  LAYOUT_VERSION,
  migrateQueue,
  migrationBlockers,
  QueueStore,
} from '@zkq/core/internal';
import type { Job, JobType, Queue } from '@zkq/producer';
import type { ArgumentsCamelCase, Argv } from 'yargs';
import { type GlobalArgs, integer, positive, withQueue, withSession, zooKeeperOptions } from '../context.js';
import { CliError, EXIT, NotSupportedError, UsageError } from '../errors.js';
import { plural, printJson, println } from '../output.js';
import { assertQueueExists } from '../reader.js';

/** Queue methods added over time; looked up at run time. */
interface QueueAdmin {
  drain?(delayed?: boolean): Promise<void>;
  clean?(grace: number, limit: number, type?: string): Promise<string[]>;
  obliterate?(opts?: { force?: boolean; count?: number }): Promise<void>;
  retryJobs?(opts?: { state?: string; count?: number; timestamp?: number }): Promise<void>;
  promoteJobs?(opts?: { count?: number }): Promise<void>;
}

interface JobAdmin {
  retry?(state?: string): Promise<void>;
  remove?(): Promise<void>;
  promote?(): Promise<void>;
}

/** The bound method `name` of `target`, or NotSupportedError naming `api`. */
function need<T extends object, K extends keyof T>(
  target: T,
  name: K,
  command: string,
  api: string,
): NonNullable<T[K]> {
  const fn = target[name];
  if (typeof fn !== 'function') throw new NotSupportedError(command, api);
  return fn.bind(target) as NonNullable<T[K]>;
}

async function count(queue: Queue, ...types: JobType[]): Promise<number> {
  const counts = await queue.getJobCounts(...types);
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

async function jobOrFail(queue: Queue, id: string): Promise<Job> {
  const job = await queue.getJob(id);
  if (!job) throw new CliError(`job ${id} not found in queue ${queue.name}`, EXIT.NOT_FOUND);
  return job;
}

type Out = { json: boolean };
function report(argv: Out, json: Record<string, unknown>, text: string): void {
  if (argv.json) printJson(json);
  else println(text);
}

const queueArg = { type: 'string', demandOption: true, describe: 'Queue name' } as const;
const jsonOpt = { type: 'boolean', default: false, describe: 'Print JSON' } as const;
const createOpt = {
  type: 'boolean',
  default: false,
  describe: 'Create the queue when it does not exist (else exit 8)',
} as const;

/**
 * Runs `fn` on the queue `name` once it is known to exist; QueueNotFoundError
 * (exit 8) otherwise, with nothing created, unless `create`. (Opening a Queue
 * creates its nodes, so existence is asked first, from the root.)
 */
export async function withExistingQueue<T>(
  args: GlobalArgs,
  name: string,
  fn: (queue: Queue) => Promise<T>,
  create = false,
): Promise<T> {
  if (!create) await assertQueueExists(args, name);
  return withQueue(args, name, fn);
}

/** `zkq pause` (paused) or `zkq resume`: the queue's paused flag set, for every worker. */
function pauseCommand(paused: boolean) {
  const name = paused ? 'pause' : 'resume';
  return [
    `${name} <queue>`,
    paused
      ? 'Stop every worker of the queue from claiming jobs (running jobs finish)'
      : 'Let workers claim jobs of the queue again',
    (b: Argv<GlobalArgs>) => {
      const built = zooKeeperOptions(
        b.positional('queue', queueArg).option('json', jsonOpt).option('create', createOpt),
      ).example(`$0 ${name} emails`, `${paused ? 'Pause' : 'Resume'} emails`);
      return paused
        ? built.example('$0 pause emails --create', 'Pause emails, a new queue, before its first job')
        : built;
    },
    async (argv: ArgumentsCamelCase<GlobalArgs & { queue: string; json: boolean; create: boolean }>) => {
      await withExistingQueue(
        argv,
        argv.queue,
        async (queue) => {
          await (paused ? queue.pause() : queue.resume());
          report(argv, { queue: argv.queue, paused }, `${paused ? 'paused' : 'resumed'} ${argv.queue}`);
        },
        argv.create,
      );
    },
  ] as const;
}

export function registerAdminCommands(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y
    .command(...pauseCommand(true))
    .command(...pauseCommand(false))
    .command(
      'retry <queue>',
      'Move failed (or completed) jobs back to waiting; one job with --job',
      (b) =>
        zooKeeperOptions(b.positional('queue', queueArg))
          .option('state', { choices: ['failed', 'completed'] as const, default: 'failed' as const })
          .option('job', { type: 'string', describe: 'Retry only this job id' })
          .option('json', jsonOpt)
          .example('$0 retry emails', 'Retry every failed job')
          .example('$0 retry emails --job 42', 'Retry job 42'),
      async (argv) => {
        await withExistingQueue(argv, argv.queue, async (queue) => {
          if (argv.job !== undefined) {
            const job = await jobOrFail(queue, argv.job);
            await need(job as JobAdmin, 'retry', 'retry --job', 'Job.retry')(argv.state);
            report(argv, { queue: argv.queue, retried: [argv.job] }, `retried job ${argv.job}`);
            return;
          }
          const retryJobs = need(queue as QueueAdmin, 'retryJobs', 'retry', 'Queue.retryJobs');
          const before = await count(queue, argv.state);
          await retryJobs({ state: argv.state });
          const moved = before - (await count(queue, argv.state));
          report(
            argv,
            { queue: argv.queue, state: argv.state, retried: moved },
            `retried ${plural(moved, `${argv.state} job`)} of ${argv.queue}`,
          );
        });
      },
    )
    .command(
      'promote <queue>',
      'Make delayed jobs waiting now; one job with --job',
      (b) =>
        zooKeeperOptions(b.positional('queue', queueArg))
          .option('job', { type: 'string', describe: 'Promote only this job id' })
          .option('json', jsonOpt)
          .example('$0 promote emails', 'Run every delayed job now'),
      async (argv) => {
        await withExistingQueue(argv, argv.queue, async (queue) => {
          if (argv.job !== undefined) {
            const job = await jobOrFail(queue, argv.job);
            await need(job as JobAdmin, 'promote', 'promote --job', 'Job.promote')();
            report(argv, { queue: argv.queue, promoted: [argv.job] }, `promoted job ${argv.job}`);
            return;
          }
          const promoteJobs = need(queue as QueueAdmin, 'promoteJobs', 'promote', 'Queue.promoteJobs');
          const before = await count(queue, 'delayed');
          await promoteJobs();
          const moved = before - (await count(queue, 'delayed'));
          report(
            argv,
            { queue: argv.queue, promoted: moved },
            `promoted ${plural(moved, 'delayed job')} of ${argv.queue}`,
          );
        });
      },
    )
    .command(
      'remove <queue> <id>',
      'Remove one job (not while it is active)',
      (b) =>
        zooKeeperOptions(
          b.positional('queue', queueArg).positional('id', { type: 'string', demandOption: true, describe: 'Job id' }),
        )
          .option('json', jsonOpt)
          .example('$0 remove emails 42', 'Remove job 42'),
      async (argv) => {
        await withExistingQueue(argv, argv.queue, async (queue) => {
          const job = await jobOrFail(queue, String(argv.id));
          await need(job as JobAdmin, 'remove', 'remove', 'Job.remove')();
          report(argv, { queue: argv.queue, removed: [String(argv.id)] }, `removed job ${argv.id}`);
        });
      },
    )
    .command(
      'clean <queue>',
      'Remove finished jobs older than --grace ms, at most --limit',
      (b) =>
        zooKeeperOptions(b.positional('queue', queueArg))
          .option('grace', { type: 'number', demandOption: true, describe: 'Keep jobs younger than this, ms' })
          .option('limit', { type: 'number', default: 1000, describe: 'Most jobs removed' })
          .option('state', {
            choices: ['completed', 'failed', 'delayed', 'wait'] as const,
            default: 'completed' as const,
          })
          .option('json', jsonOpt)
          .example('$0 clean emails --grace 3600000 --state failed', 'Drop failures older than an hour'),
      async (argv) => {
        if (!Number.isFinite(argv.grace) || argv.grace < 0) throw new UsageError('--grace must be a number >= 0');
        integer(argv.limit, '--limit', 0);
        await withExistingQueue(argv, argv.queue, async (queue) => {
          const clean = need(queue as QueueAdmin, 'clean', 'clean', 'Queue.clean');
          const removed = await clean(argv.grace, argv.limit, argv.state);
          report(
            argv,
            { queue: argv.queue, state: argv.state, removed },
            `removed ${plural(removed.length, `${argv.state} job`)} of ${argv.queue}`,
          );
        });
      },
    )
    .command(
      'drain <queue>',
      'Remove every waiting job (and delayed ones with --delayed); active jobs go on',
      (b) =>
        zooKeeperOptions(b.positional('queue', queueArg))
          .option('delayed', { type: 'boolean', default: false, describe: 'Remove delayed jobs too' })
          .option('json', jsonOpt)
          .example('$0 drain emails --delayed', 'Empty the backlog'),
      async (argv) => {
        await withExistingQueue(argv, argv.queue, async (queue) => {
          const drain = need(queue as QueueAdmin, 'drain', 'drain', 'Queue.drain');
          const states: JobType[] = ['waiting', 'paused', 'prioritized', ...(argv.delayed ? ['delayed' as const] : [])];
          const before = await count(queue, ...states);
          await drain(argv.delayed);
          const removed = before - (await count(queue, ...states));
          report(argv, { queue: argv.queue, removed }, `drained ${plural(removed, 'job')} from ${argv.queue}`);
        });
      },
    )
    .command(
      'obliterate <queue>',
      'Delete the queue and all its jobs',
      (b) =>
        zooKeeperOptions(b.positional('queue', queueArg))
          .option('force', { type: 'boolean', default: false, describe: 'Even while jobs are active' })
          .option('yes', { alias: 'y', type: 'boolean', default: false, describe: 'Do not ask for confirmation' })
          .option('json', jsonOpt)
          .example('$0 obliterate scratch', 'Asks, then deletes queue scratch')
          .example('$0 obliterate scratch --yes --force', 'No questions, even with active jobs'),
      async (argv) => {
        if (!argv.yes && !process.stdin.isTTY) {
          throw new UsageError('refusing to obliterate without --yes when not run from a terminal');
        }
        await withExistingQueue(argv, argv.queue, async (queue) => {
          const obliterate = need(queue as QueueAdmin, 'obliterate', 'obliterate', 'Queue.obliterate');
          if (!argv.yes) await confirm(queue, argv);
          await obliterate({ force: argv.force });
          report(argv, { queue: argv.queue, obliterated: true }, `obliterated ${argv.queue}`);
        });
      },
    )
    .command(
      'migrate <queue>',
      'Move a queue of an earlier zkq (znode layout 2) to this one (layout 3), once its workers are stopped',
      (b) =>
        zooKeeperOptions(b.positional('queue', queueArg))
          .option('wait', {
            type: 'boolean',
            default: false,
            describe: 'Wait for registered workers and claimed jobs to go (else refuse while there are any)',
          })
          .option('timeout', {
            type: 'number',
            default: DEFAULT_MIGRATE_TIMEOUT_MS,
            describe: 'With --wait: give up after this many ms (exit 7)',
          })
          .option('json', jsonOpt)
          .example('$0 migrate emails', 'Migrate emails, its workers stopped')
          .example('$0 migrate emails --wait --timeout 120000', 'Migrate emails once its workers are gone'),
      async (argv) => {
        positive(argv.timeout, '--timeout');
        await assertQueueExists(argv, argv.queue);
        await withSession(argv, async (session) => {
          const result = await migrateQueue(new QueueStore(session, argv.queue), {
            wait: argv.wait,
            timeoutMs: argv.timeout,
            onWaiting: (workers, claims) =>
              process.stderr.write(`zkq: waiting for ${migrationBlockers(workers, claims)} to go\n`),
          });
          if (result === 'current') {
            report(
              argv,
              { queue: argv.queue, layout: LAYOUT_VERSION, migrated: false },
              `${argv.queue} has layout ${LAYOUT_VERSION} already: nothing to migrate`,
            );
            return;
          }
          report(
            argv,
            { queue: argv.queue, migrated: true, ...result },
            `migrated ${argv.queue} from layout ${result.from} to layout ${result.to}` +
              ` (${plural(result.jobsFixed, 'job')} of dead attempts back to waiting, a stall counted)`,
          );
        });
      },
    );
}

async function confirm(queue: Queue, argv: GlobalArgs & { queue: string }): Promise<void> {
  const total = await count(queue, 'waiting', 'active', 'delayed', 'prioritized', 'paused', 'completed', 'failed');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(
      `Delete queue '${argv.queue}' (${plural(total, 'job')}) under /${argv.namespace} at ${argv.zk}? Type the queue name to confirm: `,
    );
    if (answer.trim() !== argv.queue) throw new CliError('not confirmed; nothing was deleted', EXIT.FAILURE);
  } finally {
    rl.close();
  }
}
