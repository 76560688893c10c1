/**
 * `zkq stats`, `zkq jobs`, `zkq job`, `zkq queues`: look at queues. They
 * read through reader.ts and create nothing; a queue that does not exist
 * ends them with exit 8. `zkq job --follow` then follows the job (follow.ts).
 */
import { LeaderElection, NoNodeError, type Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import type { Argv } from 'yargs';
import { type GlobalArgs, integer, zooKeeperOptions } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { brief, duration, plural, printJson, println, printPairs, printTable, time } from '../output.js';
import { type JobView, LIST_STATES, type ListState, withEveryQueue, withReader } from '../reader.js';
import { followJob } from './follow.js';

/** `--state` values: the listed states, and `wait`, BullMQ's name for `waiting`. */
export const JOB_STATES = [...LIST_STATES, 'wait'] as const;
export const DEFAULT_PAGE = 20;
/** Columns of `zkq queues`, in order; a paused queue's waiting jobs show under WAITING. */
const QUEUE_COLUMNS = ['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'] as const;

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

/**
 * The attempt a job is on: a running job's counts the attempt that runs
 * (`attemptsStarted`: BullMQ's `attemptsMade` counts only finished ones), any
 * other job's the attempts made; out of the attempts allowed.
 */
function attempts({ job, state }: JobView): string {
  return `${state === 'active' ? job.attemptsStarted : job.attemptsMade}/${job.opts.attempts ?? 1}`;
}

function jobRow(view: JobView, showDue: boolean): string[] {
  const { job, state, due } = view;
  const last =
    state === 'failed' ? (job.failedReason ?? '-') : brief(state === 'completed' ? job.returnvalue : job.data, 50);
  return [job.id, job.name, state, attempts(view), time(job.timestamp), ...(showDue ? [time(due)] : []), last];
}

/**
 * Under a listing that does not show every job of its state: which ones it
 * shows (positions counted from 1), of how many, and how to see the next page.
 */
function pageNote(start: number, end: number, shown: number, total: number, state: string): string {
  const span = shown > 0 ? `${start + 1}-${start + shown}` : 'none';
  const more = [
    ...(end >= 0 && start + shown < total ? [`--start ${end + 1} --end ${2 * end - start + 1} for the next page`] : []),
    '--end -1 for all',
  ];
  return `showing ${span} of ${plural(total, `${state} job`)} (${more.join(', ')})`;
}

/** A job as JSON: the job, its state now, live progress, `due` for a delayed job, `parentKey` for a child. */
function jobJson({ job, state, progress, due }: JobView): Record<string, unknown> {
  return {
    ...job.toJSON(),
    progress,
    state,
    ...(due !== undefined ? { due } : {}),
    ...(job.parentKey ? { parentKey: job.parentKey } : {}),
  };
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
        await withReader(argv, argv.queue, async (reader) => {
          const [counts, paused, workers, leader] = await Promise.all([
            reader.counts(),
            reader.isPaused(),
            liveWorkers(reader.session, argv.queue),
            currentLeader(reader.session, argv.queue),
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
          .example('$0 jobs emails --state delayed', 'Delayed jobs, with when each is due')
          .example('$0 jobs renders --state waiting-children', 'Parents waiting for their children (flows)')
          .example('$0 jobs emails --state waiting --start 0 --end -1 --json', 'Every waiting job, as JSON'),
      async (argv) => {
        integer(argv.start, '--start', 0);
        integer(argv.end, '--end', -1);
        const state: ListState = argv.state === 'wait' ? 'waiting' : argv.state;
        await withReader(argv, argv.queue, async (reader) => {
          const jobs = await reader.list(state, argv.start, argv.end);
          if (argv.json) {
            printJson(jobs.map(jobJson));
            return;
          }
          const last = state === 'failed' ? 'REASON' : state === 'completed' ? 'RESULT' : 'DATA';
          const showDue = state === 'delayed';
          printTable(
            ['ID', 'NAME', 'STATE', 'ATTEMPTS', 'CREATED', ...(showDue ? ['DUE'] : []), last],
            jobs.map((j) => jobRow(j, showDue)),
          );
          const total = (await reader.counts())[state] ?? 0;
          if (argv.start > 0 || jobs.length < total) println(pageNote(argv.start, argv.end, jobs.length, total, state));
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
          .option('follow', {
            alias: 'f',
            type: 'boolean',
            default: false,
            describe: 'Then print its state changes and progress until it finishes (exit 0 completed, 1 failed)',
          })
          .example('$0 job emails 42', 'Show job 42')
          .example('$0 job emails 42 --follow', 'Show job 42, then follow it until it finishes')
          .example('$0 job emails 42 --json | jq .returnvalue', 'Its result, for a script'),
      async (argv) => {
        const id = String(argv.id);
        await withReader(argv, argv.queue, async (reader) => {
          const view = await reader.job(id);
          if (!view) throw new CliError(`job ${argv.id} not found in queue ${argv.queue}`, EXIT.NOT_FOUND);
          const { job, state, progress, due } = view;
          const logs = await job.getLogs();
          if (argv.json && argv.follow) {
            println(JSON.stringify({ ...jobJson(view), logs }));
            return;
          }
          if (argv.json) {
            printJson({ ...jobJson(view), logs });
            return;
          }
          printPairs([
            ['id', job.id],
            ['name', job.name],
            ['queue', argv.queue],
            ['state', state],
            ...(due !== undefined ? [['due', time(due)] as [string, string]] : []),
            [
              'attempts',
              state === 'active'
                ? `${attempts(view)}, running (${job.attemptsMade} finished before it)`
                : `${attempts(view)} made (${job.attemptsStarted} started)`,
            ],
            ['created', time(job.timestamp)],
            ['processed', time(job.processedOn)],
            ['finished', time(job.finishedOn)],
            ['worker', job.processedBy ?? '-'],
            ...(job.parentKey ? [['parent', job.parentKey] as [string, string]] : []),
            ['progress', brief(progress, 200)],
            ['data', JSON.stringify(job.data)],
            ['options', JSON.stringify(job.opts)],
            ...(job.returnvalue !== undefined ? [['result', JSON.stringify(job.returnvalue)] as [string, string]] : []),
            ...(job.failedReason ? [['failed', job.failedReason] as [string, string]] : []),
          ]);
          for (const line of logs) println(`log  ${line}`);
        });
        if (argv.follow) await followJob(argv, argv.queue, id);
      },
    )
    .command(
      'queues',
      'List the queues under the namespace with their job counts',
      (b) =>
        zooKeeperOptions(b)
          .option('json', { type: 'boolean', default: false, describe: 'Print JSON' })
          .example('$0 queues', 'Every queue with its counts')
          .example('$0 queues --namespace staging --json', 'The queues of another namespace, as JSON'),
      async (argv) => {
        const queues = await withEveryQueue(argv, async (reader) => {
          const [counts, paused] = await Promise.all([reader.counts(), reader.isPaused()]);
          return { queue: reader.name, paused, counts };
        });
        if (argv.json) {
          printJson(queues);
          return;
        }
        printTable(
          ['QUEUE', 'PAUSED', ...QUEUE_COLUMNS.map((c) => c.toUpperCase())],
          queues.map(({ queue, paused, counts }) => [
            queue,
            paused ? 'yes' : 'no',
            ...QUEUE_COLUMNS.map((c) => String((counts[c] ?? 0) + (c === 'waiting' ? (counts.paused ?? 0) : 0))),
          ]),
        );
      },
    );
}
