/**
 * `zkq cancel <queue> <id>`: cancels a running job in whichever process runs
 * it (Queue.cancelJob). Exit 0 once the request reached the running attempt,
 * 5 when there is no such job, 1 when the job is not active, 8 when there is
 * no such queue (nothing is created).
 */
import type { Queue } from '@zkq/producer';
import type { Argv } from 'yargs';
import { type GlobalArgs, zooKeeperOptions } from '../context.js';
import { CliError, EXIT, NotSupportedError } from '../errors.js';
import { printJson, println } from '../output.js';
import { withExistingQueue } from './admin.js';

/** Looked up at run time: an older library lacks it. */
interface QueueCancel {
  cancelJob?(jobId: string, reason?: string): Promise<boolean>;
}

export function registerCancelCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'cancel <queue> <id>',
    "Cancel a running job: its processor's abort signal fires, in whichever worker runs it",
    (b) =>
      zooKeeperOptions(
        b
          .positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })
          .positional('id', { type: 'string', demandOption: true, describe: 'Job id' }),
      )
        .option('reason', { type: 'string', describe: "The abort signal's reason (the processor decides what to do)" })
        .option('json', { type: 'boolean', default: false, describe: 'Print JSON' })
        .example('$0 cancel emails 42 --reason "sent by mistake"', 'Cancel job 42 wherever it runs'),
    async (argv) => {
      const id = String(argv.id);
      await withExistingQueue(argv, argv.queue, async (queue: Queue) => {
        const cancelJob = (queue as QueueCancel).cancelJob;
        if (typeof cancelJob !== 'function') throw new NotSupportedError('cancel', 'Queue.cancelJob');
        if (!(await cancelJob.call(queue, id, argv.reason))) {
          const state = await queue.getJobState(id);
          if (state === 'unknown') throw new CliError(`job ${id} not found in queue ${argv.queue}`, EXIT.NOT_FOUND);
          throw new CliError(`job ${id} is ${state}, not active: nothing to cancel`, EXIT.FAILURE);
        }
        if (argv.json) printJson({ queue: argv.queue, id, cancelRequested: true });
        else println(`cancel requested for job ${id}`);
      });
    },
  );
}
