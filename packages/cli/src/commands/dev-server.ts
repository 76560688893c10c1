/**
 * `zkq dev-server`: a local ZooKeeper for development (standalone, or a
 * 3-server ensemble on loopback). When ZooKeeper is missing it says so and
 * runs the install script (as root: Debian's package through apt-get),
 * unless `--no-install`. Runs until SIGINT/SIGTERM, then stops the server(s).
 */
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Argv } from 'yargs';
import type { GlobalArgs } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { createLogger } from '../logger.js';
import { printJson, println } from '../output.js';

export const DEV_SERVER_PORT = 2181;
export const DEV_SERVER_HEAP_MB = 512;

/** A running local server or ensemble. */
export interface DevServer {
  connectionString: string;
  stop(): Promise<void>;
}

/** Fails with a clear message when `port` is taken on loopback. */
function checkPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new CliError(`port ${port} is in use (another ZooKeeper?); pick one with --port, or --port 0 for any`)
          : err,
      ),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

/**
 * The optional package that installs and starts ZooKeeper. It is loaded on
 * use, so that production installs of the CLI can leave it out.
 */
async function loadTesting(): Promise<typeof import('@zkq/testing')> {
  try {
    import.meta.resolve('@zkq/testing');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new CliError(
      'this command needs the optional package @zkq/testing: install it next to @zkq/cli ' +
        '(npm install @zkq/testing, or npm install --global @zkq/testing for a global zkq)',
      EXIT.NOT_SUPPORTED,
    );
  }
  return import('@zkq/testing');
}

/** The script that installs ZooKeeper (shipped with @zkq/testing). */
function installScript(): string {
  return fileURLToPath(new URL('../bin/install-zookeeper.sh', import.meta.resolve('@zkq/testing')));
}

/**
 * Starts a standalone server (`port` 0: any free port) or a 3-server
 * ensemble. When ZooKeeper is missing: with `install` false, fails saying
 * what to install; otherwise writes to stderr what it is about to run first.
 */
export async function startDevServer(opts: {
  ensemble?: boolean;
  port?: number;
  dataDir?: string;
  install?: boolean;
}): Promise<DevServer> {
  const { findZooKeeperClasspath, startEnsemble, startZooKeeper } = await loadTesting();
  const install = opts.install !== false;
  if (!findZooKeeperClasspath()) {
    const script = installScript();
    if (!install) {
      throw new CliError(
        `ZooKeeper is not installed (and --no-install was given): install Debian's zookeeper package ` +
          `(sudo apt-get install zookeeper), run bash ${script}, or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release`,
      );
    }
    process.stderr.write(
      `zkq: ZooKeeper is not installed; running bash ${script}, which as root installs Debian's ` +
        `zookeeper package with apt-get (run with --no-install to stop here instead)\n`,
    );
  }
  const common = { heapMb: DEV_SERVER_HEAP_MB, install, ...(opts.dataDir ? { dataDir: opts.dataDir } : {}) };
  if (opts.ensemble) return startEnsemble(common);
  if (opts.port) await checkPortFree(opts.port);
  return startZooKeeper({ ...common, ...(opts.port ? { clientPort: opts.port } : {}) });
}

/** Resolves with the first of SIGINT/SIGTERM. */
export function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

export function registerDevServerCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'dev-server',
    'Run a local ZooKeeper for development until Ctrl-C',
    (b) =>
      b
        .option('ensemble', { type: 'boolean', default: false, describe: 'Three servers on free loopback ports' })
        .option('port', {
          type: 'number',
          default: DEV_SERVER_PORT,
          describe: 'Client port of the standalone server (0: any free port)',
        })
        .option('data-dir', {
          type: 'string',
          describe: 'Keep data here (default: a temporary folder, removed on stop)',
        })
        .option('install', {
          type: 'boolean',
          default: true,
          describe: 'Install ZooKeeper when it is missing (as root: apt-get); --no-install: fail instead',
        })
        .option('json', { type: 'boolean', default: false, describe: 'Print the connection string as JSON' })
        .example('$0 dev-server', 'ZooKeeper on 127.0.0.1:2181')
        .example('$0 dev-server --ensemble', 'A 3-server ensemble')
        .example('$0 dev-server --port 0 --no-install', 'Any free port; never install anything'),
    async (argv) => {
      if (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535) {
        throw new UsageError('--port must be a port number (0: any free port)');
      }
      const log = createLogger(argv, 'stderr');
      const stopped = nextSignal();
      log.info({ ensemble: argv.ensemble }, 'starting ZooKeeper');
      const server = await startDevServer({
        ensemble: argv.ensemble,
        port: argv.port,
        install: argv.install,
        ...(argv.dataDir ? { dataDir: argv.dataDir } : {}),
      });
      const cs = server.connectionString;
      if (argv.json) printJson({ connectionString: cs, ensemble: argv.ensemble });
      else {
        println(`ZooKeeper ${argv.ensemble ? 'ensemble' : 'server'} is serving at ${cs}`);
        println(`export ZKQ_ZK=${cs}`);
      }
      const signal = await stopped;
      log.info({ signal }, 'stopping ZooKeeper');
      await server.stop();
      log.info('ZooKeeper stopped');
    },
  );
}
