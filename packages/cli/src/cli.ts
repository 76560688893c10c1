/**
 * The `zkq` command line: global options, the command groups, and one place
 * that turns any failure into one line on stderr and an exit code.
 */
import yargs, { type Argv } from 'yargs';
import { registerAdminCommands } from './commands/admin.js';
import { registerCoordinationCommands } from './commands/coordination.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerDevServerCommand } from './commands/dev-server.js';
import { registerEnqueueCommands } from './commands/enqueue.js';
import { registerEventsCommand } from './commands/events.js';
import { registerInspectCommands } from './commands/inspect.js';
import { registerWorkerCommand } from './commands/worker.js';
import { type GlobalArgs, globalOptions } from './context.js';
import { reportError, UsageError } from './errors.js';

const EPILOGUE =
  'Docs: docs/cli.md. Exit codes: 0 ok, 1 failed, 2 bad usage, 3 ZooKeeper unreachable, 4 not authorized.';

/** Command names, to point usage errors at the right --help. */
const COMMANDS = new Set(
  'worker add add-bulk stats jobs job events pause resume retry promote remove clean drain obliterate barrier lock leader dev-server demo'.split(
    ' ',
  ),
);

/** Builds the parser for `argv` (without the node and script paths). */
export function buildParser(argv: string[]): Argv<GlobalArgs> {
  let y = globalOptions(yargs(argv))
    .scriptName('zkq')
    .usage('$0 <command> [options]\n\nWorker daemons, jobs and coordination on Apache ZooKeeper.')
    .parserConfiguration({ 'populate--': true })
    .strict()
    .demandCommand(1, 'name a command (zkq --help lists them)')
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .version()
    .epilogue(EPILOGUE)
    .wrap(Math.min(120, process.stdout.columns || 100))
    .fail((msg, err) => {
      throw err ?? new UsageError(usageMessage(msg, argv));
    });
  y = registerWorkerCommand(y);
  y = registerEnqueueCommands(y);
  y = registerInspectCommands(y);
  y = registerEventsCommand(y);
  y = registerAdminCommands(y);
  y = registerCoordinationCommands(y);
  y = registerDevServerCommand(y);
  y = registerDemoCommand(y);
  return y;
}

/** yargs' complaint, with where to look for help. */
function usageMessage(raw: string, argv: string[]): string {
  const msg = raw.replace(/\s*\n\s*/g, ' ').trim();
  const command = argv.find((a) => COMMANDS.has(a));
  const guess = argv.find((a) => !a.startsWith('-'));
  const suggestion = /^Did you mean (.+)\?$/.exec(msg);
  if (!command && suggestion)
    return `unknown command '${guess}'; did you mean ${suggestion[1]}? (zkq --help lists them)`;
  if (!command && /^Unknown arguments?: /.test(msg)) return `unknown command '${guess}' (zkq --help lists them)`;
  return `${msg} (see zkq ${command ? `${command} ` : ''}--help)`;
}

/** Runs the command line; resolves with the exit code (commands that keep running resolve when done). */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildParser(argv).parseAsync();
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (err) {
    return reportError(err, argv.includes('--verbose') || argv.includes('-v'));
  }
}
