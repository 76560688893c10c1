/** `zkq stats`, `zkq jobs`, `zkq job`: look at a queue. */
import { type Job, type JobType, LeaderElection, NoNodeError, QueueLayout, type Session } from '@zkq/core';
import type { Argv } from 'yargs';
import { type GlobalArgs, integer, withQueue, zooKeeperOptions } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { brief, duration, printJson, println, printPairs, printTable, time } from '../output.js';

export const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'paused'] as const;
export const DEFAULT_PAGE = 20;

/** A live worker as registered under `workers/<id>`. */
export interface WorkerInfo {
  id: string;
  host?: string;
  pid?: number;
  concurrency?: number;
  startedAt?: number;
  [key: string]: unknown;
}

/** Live workers of a queue with what they registered. */
export async function liveWorkers(session: Session, queue: string): Promise<WorkerInfo[]> {
  const layout = new QueueLayout(queue);
  let ids: string[];
  try {
    ids = (await session.getChildren(layout.workersDir)).sort();
  } catch (err) {
    if (err instanceof NoNodeError) return [];
    throw err;
  }
  const infos = await Promise.all(
    ids.map(async (id): Promise<WorkerInfo | undefined> => {
      try {
        const { data } = await session.getData(layout.worker(id));
        const parsed = JSON.parse(data.toString() || '{}') as Record<string, unknown>;
        return { ...parsed, id };
      } catch (err) {
        if (err instanceof NoNodeError) return undefined; // left meanwhile
        if (err instanceof SyntaxError) return { id };
        throw err;
      }
    }),
  );
  return infos.filter((i): i is WorkerInfo => i !== undefined);
}

/** The id of the current leader of the queue's housekeeping election, or undefined. */
export function currentLeader(session: Session, queue: string): Promise<string | undefined> {
  return new LeaderElection(session, new QueueLayout(queue).leaderDir, { id: 'zkq-cli-observer' }).leader();
}

function jobRow(job: Job, state: string): string[] {
  return [
    job.id,
    job.name,
    state,
    `${job.attemptsMade}/${job.opts.attempts ?? 1}`,
    time(job.timestamp),
    state === 'failed' ? (job.failedReason ?? '-') : brief(state === 'completed' ? job.returnvalue : job.data, 50),
  ];
}

export function registerInspectCommands(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y
    .command(
      'stats <queue>',
      'Counts per state, live workers, the leader, and whether the queue is paused',
      (b) =>
        zooKeeperOptions(b.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' }))
          .option('json', { type: 'boolean', default: false, describe: 'Print JSON' })
          .example('$0 stats emails', 'Show the queue')
          .example('$0 stats emails --json | jq .counts.waiting', 'Waiting jobs, for a script'),
      async (argv) => {
        await withQueue(argv, argv.queue, async (queue) => {
          const session = await queue.waitUntilReady();
          const [counts, paused, workers, leader] = await Promise.all([
            queue.getJobCounts(),
            queue.isPaused(),
            liveWorkers(session, argv.queue),
            currentLeader(session, argv.queue),
          ]);
          if (argv.json) {
            printJson({ queue: argv.queue, paused, counts, workers, leader: leader ?? null });
            return;
          }
          printPairs([
            ['queue', argv.queue],
            ['paused', paused ? 'yes' : 'no'],
            ['leader', leader ?? 'none'],
          ]);
          println();
          printTable(
            ['STATE', 'JOBS'],
            Object.entries(counts).map(([state, n]) => [state, String(n)]),
          );
          println();
          println(`workers (${workers.length})`);
          const now = Date.now();
          printTable(
            ['ID', 'HOST', 'PID', 'CONCURRENCY', 'UP'],
            workers.map((w) => [
              w.id,
              String(w.host ?? '-'),
              String(w.pid ?? '-'),
              String(w.concurrency ?? '-'),
              w.startedAt ? duration(now - w.startedAt) : '-',
            ]),
          );
        });
      },
    )
    .command(
      'jobs <queue>',
      'List jobs in one state',
      (b) =>
        zooKeeperOptions(b.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' }))
          .option('state', { choices: JOB_STATES, default: 'waiting' as const, describe: 'Which jobs' })
          .option('start', { type: 'number', default: 0, describe: 'First position (0-based)' })
          .option('end', {
            type: 'number',
            default: DEFAULT_PAGE - 1,
            describe: 'Last position, inclusive (-1: to the end)',
          })
          .option('json', { type: 'boolean', default: false, describe: 'Print JSON' })
          .example('$0 jobs emails --state failed', 'The 20 most recent failures')
          .example('$0 jobs emails --state waiting --start 0 --end -1 --json', 'Every waiting job, as JSON'),
      async (argv) => {
        integer(argv.start, '--start', 0);
        integer(argv.end, '--end', -1);
        const state = argv.state as JobType;
        // Finished jobs newest first, the others in the order they will run.
        const asc = state !== 'completed' && state !== 'failed';
        await withQueue(argv, argv.queue, async (queue) => {
          const jobs = await queue.getJobs([state], argv.start, argv.end, asc);
          if (argv.json) {
            printJson(jobs.map((j) => ({ ...j.toJSON(), state })));
            return;
          }
          const last = state === 'failed' ? 'REASON' : state === 'completed' ? 'RESULT' : 'DATA';
          printTable(
            ['ID', 'NAME', 'STATE', 'ATTEMPTS', 'CREATED', last],
            jobs.map((j) => jobRow(j, state)),
          );
        });
      },
    )
    .command(
      'job <queue> <id>',
      'Show one job',
      (b) =>
        zooKeeperOptions(
          b
            .positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })
            .positional('id', { type: 'string', demandOption: true, describe: 'Job id' }),
        )
          .option('json', { type: 'boolean', default: false, describe: 'Print JSON' })
          .example('$0 job emails 42', 'Show job 42')
          .example('$0 job emails 42 --json | jq .returnvalue', 'Its result, for a script'),
      async (argv) => {
        await withQueue(argv, argv.queue, async (queue) => {
          const job = await queue.getJob(String(argv.id));
          if (!job) throw new CliError(`job ${argv.id} not found in queue ${argv.queue}`, EXIT.NOT_FOUND);
          const [state, logs] = await Promise.all([job.getState(), job.getLogs()]);
          if (argv.json) {
            printJson({ ...job.toJSON(), state, logs });
            return;
          }
          printPairs([
            ['id', job.id],
            ['name', job.name],
            ['queue', argv.queue],
            ['state', state],
            ['attempts', `${job.attemptsMade} made, ${job.attemptsStarted} started, ${job.opts.attempts ?? 1} allowed`],
            ['created', time(job.timestamp)],
            ['processed', time(job.processedOn)],
            ['finished', time(job.finishedOn)],
            ['worker', job.processedBy ?? '-'],
            ['progress', brief(job.progress, 200)],
            ['data', JSON.stringify(job.data)],
            ['options', JSON.stringify(job.opts)],
            ...(job.returnvalue !== undefined ? [['result', JSON.stringify(job.returnvalue)] as [string, string]] : []),
            ...(job.failedReason ? [['failed', job.failedReason] as [string, string]] : []),
          ]);
          for (const line of logs) println(`log  ${line}`);
        });
      },
    );
}
