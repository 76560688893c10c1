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
import type { Argv } from 'yargs';
import { type GlobalArgs, zooKeeperOptions } from '../context.js';

export interface WorkerArgs extends GlobalArgs {
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
  housekeeping: boolean;
  stalledInterval: number | undefined;
}

export function registerWorkerCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'worker <queue>',
    'Run a worker daemon: claim jobs of <queue> and run them with --processor',
    (b) =>
      zooKeeperOptions(b.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' }))
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
        .option('housekeeping', {
          alias: 'leader',
          type: 'boolean',
          default: true,
          describe:
            "Do the queue's housekeeping: promote delayed jobs, heal schedulers, stand for its leader (--no-housekeeping: none of it)",
        })
        .option('stalled-interval', {
          type: 'number',
          describe: 'How often the leader looks for stalled jobs, ms (default 30000)',
        })
        .implies('barrier', 'members')
        .example('$0 worker emails --processor ./send-email.js --concurrency 10', 'Run jobs of emails')
        .example(
          '$0 worker crunch -p ./crunch.js --barrier batch --members 4 --metrics-port 9464',
          'Start when 4 workers are up; metrics on :9464',
        ),
    async (argv) => {
      // Loaded on use: the thread pool and metrics are not needed by other commands.
      const { runWorker } = await import('./worker-daemon.js');
      await runWorker(argv as unknown as WorkerArgs);
    },
  );
}
