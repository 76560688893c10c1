export { buildParser, main } from './cli.js';
export { CliError, describeError, EXIT, NotSupportedError, UsageError } from './errors.js';
