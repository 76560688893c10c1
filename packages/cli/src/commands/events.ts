/** `zkq events`: follow a queue's events (QueueEvents) until Ctrl-C. */
import { setTimeout as sleep } from 'node:timers/promises';
import { QueueEvents } from '@zkq/producer';
import type { Argv } from 'yargs';
import { connectionOf, type GlobalArgs, prefixOf, zooKeeperOptions } from '../context.js';
import { createLogger } from '../logger.js';
import { brief, println } from '../output.js';
import { assertQueueExists } from '../reader.js';
import { nextSignal } from './dev-server.js';

/**
 * How long a stop waits for the session to close. Connected, a close takes
 * milliseconds and removes the listener node at once; cut off from
 * ZooKeeper it would wait seconds for a reply that cannot come (the node
 * then goes when the session expires).
 */
export const EVENTS_CLOSE_WAIT_MS = 500;

export const QUEUE_EVENT_NAMES = [
  'added',
  'waiting',
  'active',
  'progress',
  'completed',
  'failed',
  'delayed',
  'stalled',
  'removed',
  'cleaned',
  'paused',
  'resumed',
  'drained',
] as const;

/**
 * A QueueEvents a command follows (from `lastEventId`) until a signal or its
 * first error: `failed` resolves at that error, kept in `failure`.
 */
export class FollowedEvents {
  readonly events: QueueEvents;
  failure: Error | undefined;
  readonly failed: Promise<void>;

  constructor(argv: GlobalArgs, queue: string, lastEventId: string) {
    this.events = new QueueEvents(queue, { connection: connectionOf(argv), prefix: prefixOf(argv), lastEventId });
    this.failed = new Promise<void>((resolve) =>
      this.events.on('error', (err) => {
        this.failure = err;
        resolve();
      }),
    );
  }

  /** Closes the QueueEvents, waiting for it at most EVENTS_CLOSE_WAIT_MS. */
  async close(): Promise<void> {
    await Promise.race([this.events.close(), sleep(EVENTS_CLOSE_WAIT_MS, undefined, { ref: false })]);
  }
}

export function registerEventsCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'events <queue>',
    "Print the queue's events as they happen, until Ctrl-C",
    (b) =>
      zooKeeperOptions(b.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' }))
        .option('from-start', { type: 'boolean', default: false, describe: 'Begin with the events still in the log' })
        .option('json', { type: 'boolean', default: false, describe: 'One JSON object a line' })
        .example('$0 events emails', 'Watch jobs of emails come and go')
        .example('$0 events emails --json | jq -c \'select(.event == "failed")\'', 'Failures, for a script'),
    async (argv) => {
      // QueueEvents would create a queue it does not find: check first (exit 8).
      await assertQueueExists(argv, argv.queue);
      const followed = new FollowedEvents(argv, argv.queue, argv.fromStart ? '0' : '$');
      for (const name of QUEUE_EVENT_NAMES) {
        followed.events.on(name, (...args: unknown[]) => {
          const [payload, id] = name === 'drained' ? [{}, args[0]] : args;
          const fields = (payload ?? {}) as Record<string, unknown>;
          if (argv.json) println(JSON.stringify({ event: name, id, ...fields }));
          else println(readable(name, fields));
        });
      }
      try {
        await followed.events.waitUntilReady();
        const stopped = nextSignal(); // before saying so: a signal from then on stops it cleanly
        createLogger(argv, 'stderr').info({ queue: argv.queue }, 'following events');
        await Promise.race([stopped, followed.failed]);
      } finally {
        await followed.close();
      }
      if (followed.failure) throw followed.failure;
    },
  );
}

/** One event as a line for people: time, event, job, fields. */
export function readable(event: string, fields: Record<string, unknown>): string {
  const time = new Date().toISOString().slice(11, 23);
  const { jobId, ...rest } = fields;
  const detail = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : brief(v, 80)}`)
    .join(' ');
  return `${time}  ${event.padEnd(9)} ${jobId !== undefined ? `job ${String(jobId)} ` : ''}${detail}`.trimEnd();
}
