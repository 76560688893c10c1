/**
 * pino loggers: JSON lines by default, readable lines on a terminal or with
 * `--log-format pretty`. Writes are synchronous so that nothing is lost when
 * the process exits right after logging.
 */
import { type DestinationStream, type Logger, pino } from 'pino';
import { PinoPretty } from 'pino-pretty';
import type { GlobalArgs } from './context.js';
import { endOnBrokenPipe } from './output.js';

export type { Logger } from 'pino';

/** Where logs go: daemons log to stdout, one-shot commands to stderr (stdout carries their output). */
export type LogTarget = 'stdout' | 'stderr';

export function createLogger(args: Pick<GlobalArgs, 'logLevel' | 'logFormat' | 'verbose'>, target: LogTarget): Logger {
  const fd = target === 'stdout' ? 1 : 2;
  const tty = (target === 'stdout' ? process.stdout : process.stderr).isTTY === true;
  const level = args.logLevel ?? (args.verbose ? 'debug' : 'info');
  const format = args.logFormat ?? (tty ? 'pretty' : 'json');
  const stream: DestinationStream =
    format === 'pretty'
      ? PinoPretty({
          destination: fd,
          sync: true,
          colorize: tty,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
        })
      : jsonDestination(fd);
  return pino({ level, base: { pid: process.pid } }, stream);
}

/** JSON lines to `fd`; a closed stdout ends the process quietly, a closed stderr just mutes the logs. */
function jsonDestination(fd: 1 | 2): DestinationStream {
  const destination = pino.destination({ dest: fd, sync: true });
  destination.on('error', (err: NodeJS.ErrnoException) => {
    if (fd === 1) endOnBrokenPipe(err);
    else if (err.code !== 'EPIPE') throw err;
  });
  return destination;
}
