/**
 * pino loggers: JSON lines by default, readable lines on a terminal or with
 * `--log-format pretty`. Writes are synchronous so that nothing is lost when
 * the process exits right after logging.
 */
import { type DestinationStream, type Logger, pino } from 'pino';
import { PinoPretty } from 'pino-pretty';
import type { GlobalArgs } from './context.js';

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
      : pino.destination({ dest: fd, sync: true });
  return pino({ level, base: { pid: process.pid } }, stream);
}
