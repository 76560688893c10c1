/**
 * The `zkq` command line: global options, the command groups, and one place
 * that turns any failure into one line on stderr and an exit code.
 */
import yargs, { type Argv } from 'yargs';
import { registerAdminCommands } from './commands/admin.js';
import { registerCancelCommand } from './commands/cancel.js';
import { registerCoordinationCommands } from './commands/coordination.js';
import { registerDashboardCommand } from './commands/dashboard.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerDevServerCommand } from './commands/dev-server.js';
import { registerEnqueueCommands } from './commands/enqueue.js';
import { registerEventsCommand } from './commands/events.js';
import { registerInspectCommands } from './commands/inspect.js';
import { registerWorkerCommand } from './commands/worker.js';
import { type GlobalArgs, globalOptions, zooKeeperOptions } from './context.js';
import { EXIT, EXIT_MEANINGS, reportError, UsageError } from './errors.js';

/** Shown under `zkq --help`: every exit code (from errors.ts) and where more help is. */
const EPILOGUE = [
  `Exit codes: ${Object.entries(EXIT_MEANINGS)
    .map(([code, meaning]) => `${code} ${meaning}`)
    .join(', ')}.`,
  "These are zkq's own codes: run through npx or npm exec, a Ctrl-C also ends npm, by the signal, " +
    "whatever zkq's code; run node_modules/.bin/zkq, or zkq on the PATH, to get zkq's.",
  "'zkq <command> --help' shows a command's options and examples.",
].join('\n');

/** Command names, to point usage errors at the right --help. */
const COMMANDS = new Set(
  'worker add add-bulk stats jobs job queues events pause resume retry promote remove cancel clean drain obliterate barrier lock leader dashboard dev-server demo'.split(
    ' ',
  ),
);

const NO_COMMAND = 'no command given';

/** `zkq` alone: the help is shown instead of an error line (exit 2). */
class NoCommandError extends UsageError {}

/** Builds the parser for `argv` (without the node and script paths). */
export function buildParser(argv: string[]): Argv<GlobalArgs> {
  // The ZooKeeper options are declared here for the top-level help only; each
  // command that connects declares them again (dev-server does not).
  let y = zooKeeperOptions(globalOptions(yargs(argv)))
    .scriptName('zkq')
    .usage('$0 <command> [options]\n\nWorker daemons, jobs and coordination on Apache ZooKeeper.')
    .parserConfiguration({ 'populate--': true })
    .strict()
    .demandCommand(1, NO_COMMAND)
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .version()
    .epilogue(EPILOGUE)
    .wrap(Math.min(120, process.stdout.columns || 100))
    .fail((msg, err) => {
      if (!err && msg === NO_COMMAND) throw new NoCommandError(msg);
      throw err ?? new UsageError(usageMessage(msg, argv));
    });
  y = registerWorkerCommand(y);
  y = registerEnqueueCommands(y);
  y = registerInspectCommands(y);
  y = registerEventsCommand(y);
  y = registerAdminCommands(y);
  y = registerCancelCommand(y);
  y = registerCoordinationCommands(y);
  y = registerDashboardCommand(y);
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
  const parser = buildParser(argv);
  try {
    await parser.parseAsync();
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (err) {
    if (err instanceof NoCommandError) {
      process.stderr.write(`${await parser.getHelp()}\n`);
      return EXIT.USAGE;
    }
    return reportError(err, argv.includes('--verbose') || argv.includes('-v'));
  }
}
