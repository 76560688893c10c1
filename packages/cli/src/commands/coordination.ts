/**
 * Coordination from the shell: `zkq barrier` (wait until N processes have
 * joined), `zkq lock` (run a command under an exclusive lock), `zkq leader`
 * (who leads a queue's housekeeping).
 *
 * Layout inside the namespace: `/_barriers/<name>` and `/_locks/<name>` (the
 * recipes' own nodes below them), a queue's `<queue>/leader`, and its
 * workers' batch-start barriers `<queue>/barriers/<name>` (`--queue`). The roots
 * sit beside the queues, so their names are reserved: no queue can be called
 * `_barriers` or `_locks` (zkq 0.1 used `/barriers` and `/locks`, which a
 * queue of that name shared).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { constants, hostname } from 'node:os';
import { Barrier, BatchBarrier, Lock, type Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import type { Argv } from 'yargs';
import { checkNodeName, type GlobalArgs, integer, positive, withSession, zooKeeperOptions } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { createLogger } from '../logger.js';
import { printJson, println } from '../output.js';
import { withReader } from '../reader.js';
import { currentLeader } from './inspect.js';

export const BARRIERS_DIR = '/_barriers';
export const LOCKS_DIR = '/_locks';

function memberId(): string {
  return `${hostname().replace(/[^A-Za-z0-9._-]/g, '-')}-${process.pid}`;
}

export function registerCoordinationCommands(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y
    .command(
      'barrier <name>',
      'Join a barrier and exit 0 once --members processes have joined',
      (b) =>
        zooKeeperOptions(b.positional('name', { type: 'string', demandOption: true, describe: 'Barrier name' }))
          .option('members', { type: 'number', describe: 'How many must join before anyone passes' })
          .option('timeout', { type: 'number', describe: 'Give up after this many ms (exit 7)' })
          .option('reset', {
            type: 'boolean',
            default: false,
            describe: 'Re-arm a used barrier for another round (run once, after everyone left)',
          })
          .option('queue', {
            type: 'string',
            describe: "The batch-start barrier of this queue's workers (zkq worker --barrier), batch by batch",
          })
          .example('$0 barrier nightly --members 3 && ./run-my-part.sh', 'Start three scripts together')
          .example('$0 barrier nightly --reset', 'Re-arm the barrier for the next round')
          .example('$0 barrier nightly --queue crunch --reset', "Forget the batches a workers' barrier released"),
      async (argv) => {
        checkNodeName(argv.name, 'barrier');
        if (!argv.reset) integer(argv.members, '--members');
        if (argv.timeout !== undefined) positive(argv.timeout, '--timeout');
        const log = createLogger(argv, 'stderr');
        const workers = argv.queue === undefined ? undefined : new QueueLayout(argv.queue);
        await withSession(argv, async (session) => {
          const options = { size: argv.members ?? 1, id: memberId() };
          const barrier = workers
            ? new BatchBarrier(session, `${workers.barriersDir}/${argv.name}`, options)
            : new Barrier(session, `${BARRIERS_DIR}/${argv.name}`, options);
          if (argv.reset) {
            await barrier.reset();
            println(`barrier ${argv.name} re-armed`);
            return;
          }
          log.info({ barrier: argv.name, members: argv.members }, 'waiting at barrier');
          await barrier.enter(argv.timeout !== undefined ? { timeout: argv.timeout } : {});
          println(`barrier ${argv.name}: all ${argv.members} members joined`);
        });
      },
    )
    .command(
      'lock <name> [command..]',
      'Run a command while holding an exclusive lock; exit with its exit code',
      (b) =>
        zooKeeperOptions(
          b
            .positional('name', { type: 'string', demandOption: true, describe: 'Lock name' })
            .positional('command', { type: 'string', array: true, describe: 'The command, after --' }),
        )
          .option('timeout', { type: 'number', describe: 'Give up waiting for the lock after this many ms (exit 7)' })
          .example('$0 lock nightly-report -- ./make-report.sh --full', 'One report at a time, cluster-wide'),
      async (argv) => {
        checkNodeName(argv.name, 'lock');
        if (argv.timeout !== undefined) positive(argv.timeout, '--timeout');
        const command = [...(argv.command ?? []), ...((argv['--'] as string[] | undefined) ?? [])].map(String);
        const [file, ...args] = command;
        if (!file) throw new UsageError('give the command to run after --, e.g. zkq lock name -- ./job.sh');
        const log = createLogger(argv, 'stderr');
        const code = await withSession(argv, async (session) => {
          const lock = new Lock(session, `${LOCKS_DIR}/${argv.name}`, { id: memberId() });
          log.debug({ lock: argv.name }, 'waiting for lock');
          await lock.acquire(argv.timeout !== undefined ? { timeout: argv.timeout } : {});
          log.debug({ lock: argv.name }, 'lock acquired');
          try {
            return await runUnderLock(file, args, lock, session, log);
          } finally {
            // suspended: the node goes with the session, closed (or expired) without waiting for a reply
            const connected = session.state === 'connected' || session.state === 'reconnected';
            if (connected) await lock.release().catch(() => undefined);
          }
        });
        process.exitCode = code;
      },
    )
    .command(
      'leader <queue>',
      "Print the id of the queue's current leader (or none)",
      (b) =>
        zooKeeperOptions(b.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' }))
          .option('json', { type: 'boolean', default: false, describe: 'Print JSON' })
          .example('$0 leader emails', 'Which worker does the housekeeping of emails'),
      async (argv) => {
        await withReader(argv, argv.queue, async (reader) => {
          const leader = await currentLeader(reader.session, argv.queue);
          if (argv.json) printJson({ queue: argv.queue, leader: leader ?? null });
          else println(leader ?? 'none');
        });
      },
    );
}

/**
 * Part of the session timeout that a command stopped by `zkq lock` gets
 * between SIGTERM and SIGKILL. The session is suspended at least a third of a
 * session timeout before the server can give the lock to another, so a sixth
 * leaves the other sixth for the kill to land.
 */
const KILL_GRACE_SHARE = 1 / 6;

/** How often a stopped command's process group is looked at until it is gone. */
const GROUP_POLL_MS = 50;

/**
 * Runs the command with the terminal's stdio and resolves with its exit code
 * (128 + signal number when killed). SIGINT/SIGTERM are passed on to it.
 *
 * The command runs only while the lock is sure: the moment the connection is
 * suspended (or the session lost) the command is sent SIGTERM, then SIGKILL
 * after KILL_GRACE_SHARE of the session timeout, so that it is gone before
 * the server can expire the session and another `zkq lock` start. It then
 * exits EXIT.LOCK_LOST, whatever the command's own code. The signals go to
 * the command's own process group (it is started as the leader of a new
 * one), so a script's children are stopped with it: a step that is not the
 * script's last, a pipeline, a background job would otherwise run on beside
 * the next holder's command. A stopped command is waited for until its
 * whole group is gone (or killed).
 */
function runUnderLock(
  file: string,
  args: string[],
  lock: Lock,
  session: Session,
  log: ReturnType<typeof createLogger>,
): Promise<number> {
  if (!lock.isHeld) {
    return Promise.reject(new CliError(`lock ${lock.path} was suspended before the command started`, EXIT.LOCK_LOST));
  }
  return new Promise((resolve, reject) => {
    const ownGroup = process.platform !== 'win32';
    const child = spawn(file, args, { stdio: 'inherit', detached: ownGroup });
    const signalAll = (signal: NodeJS.Signals | 0) => signalGroup(child, ownGroup, signal);
    const forward = (signal: NodeJS.Signals) => signalAll(signal);
    let stopped = false;
    let killed = false;
    let killTimer: NodeJS.Timeout | undefined;
    const kill = () => {
      killed = true;
      signalAll('SIGKILL');
    };
    const stop = (why: string) => {
      if (stopped) return;
      stopped = true;
      const graceMs = Math.floor(session.sessionTimeout * KILL_GRACE_SHARE);
      log.error({ lock: lock.path, graceMs }, `${why}: the lock may pass to another; stopping the command`);
      signalAll('SIGTERM');
      killTimer = setTimeout(kill, graceMs);
    };
    const onLost = () => stop('lock lost (ZooKeeper session expired)');
    const onSuspended = () => stop('connection to ZooKeeper suspended while holding the lock');
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    lock.on('lost', onLost);
    lock.on('suspended', onSuspended);
    const cleanup = () => {
      clearTimeout(killTimer);
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      lock.off('lost', onLost);
      lock.off('suspended', onSuspended);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      reject(
        err.code === 'ENOENT'
          ? new CliError(`cannot run '${file}': command not found`, 127)
          : new CliError(`cannot run '${file}': ${err.message}`, 126),
      );
    });
    child.once('exit', (code, signal) => {
      if (!stopped) {
        cleanup();
        resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
        return;
      }
      // the rest of its group may still run: wait until it is gone, or killed
      const poll = setInterval(() => {
        if (!killed && signalAll(0)) return;
        clearInterval(poll);
        cleanup();
        resolve(EXIT.LOCK_LOST);
      }, GROUP_POLL_MS);
    });
  });
}

/**
 * Sends `signal` to the command's process group (to the command alone when
 * it has none); signal 0 only asks. Returns whether any process received it.
 */
function signalGroup(child: ChildProcess, ownGroup: boolean, signal: NodeJS.Signals | 0): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(ownGroup ? -child.pid : child.pid, signal);
    return true;
  } catch {
    return false;
  }
}
