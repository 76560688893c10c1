export { buildParser, main } from './cli.js';
export {
  CliError,
  describeError,
  EXIT,
  EXIT_MEANINGS,
  NotSupportedError,
  UsageError,
} from './errors.js';
