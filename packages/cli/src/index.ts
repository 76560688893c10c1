export { buildParser, main } from './cli.js';
export {
  CliError,
  describeError,
  EXIT,
  EXIT_MEANINGS,
  NotSupportedError,
  QueueNotFoundError,
  UsageError,
} from './errors.js';
