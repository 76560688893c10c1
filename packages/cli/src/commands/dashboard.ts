/**
 * `zkq dashboard [queues...]`: bull-board over the namespace's queues (see
 * dashboard.ts) on an HTTP port, until SIGINT/SIGTERM. Named queues must
 * exist (exit 8); without names it shows every queue, new ones included.
 */
import type { Server } from 'node:http';
import type express from 'express';
import type { Argv } from 'yargs';
import { connectionOf, type GlobalArgs, prefixOf, zooKeeperOptions } from '../context.js';
import { type DashboardAuth, LOOPBACK_HOSTS, parseDashboardAuth } from '../dashboard-guard.js';
import { CliError, UsageError } from '../errors.js';
import { createLogger } from '../logger.js';
import { plural, printJson, println } from '../output.js';
import { assertQueueExists } from '../reader.js';
import { nextSignal } from './dev-server.js';

export const DASHBOARD_PORT = 3000;
export const DASHBOARD_HOST = '127.0.0.1';

/** Whether `host` (a listen address) is reachable from this machine only. */
export function isLoopbackAddress(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The credentials of `--http-auth` (or $ZKQ_HTTP_AUTH), checked. */
export function dashboardAuthOf(spec: string | undefined): DashboardAuth | undefined {
  if (spec === undefined || spec === '') return undefined;
  const auth = parseDashboardAuth(spec);
  if (!auth) throw new UsageError('--http-auth must be basic:user:password or bearer:token');
  return auth;
}

function listen(app: express.Express, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.once('listening', () => resolve(server));
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new CliError(`port ${port} is in use on ${host}; pick one with --port, or --port 0 for any`)
          : err,
      ),
    );
  });
}

export function registerDashboardCommand(y: Argv<GlobalArgs>): Argv<GlobalArgs> {
  return y.command(
    'dashboard [queues..]',
    'Serve bull-board for the queues (default: every queue under the namespace) until Ctrl-C',
    (b) =>
      zooKeeperOptions(
        b.positional('queues', { type: 'string', array: true, describe: 'Queue names (default: every queue)' }),
      )
        .option('port', { type: 'number', default: DASHBOARD_PORT, describe: 'HTTP port (0: any free port)' })
        .option('host', { type: 'string', default: DASHBOARD_HOST, describe: 'Address to listen on' })
        .option('read-only', {
          type: 'boolean',
          describe: 'No retry, remove, pause... from the board',
          defaultDescription: 'true when --host is not loopback and there is no --http-auth, else false',
        })
        .option('allowed-host', {
          type: 'string',
          array: true,
          default: [] as string[],
          describe: 'A host name the board is reached by, besides localhost/127.0.0.1/[::1] (repeatable)',
        })
        .option('http-auth', {
          type: 'string',
          default: process.env.ZKQ_HTTP_AUTH || undefined,
          defaultDescription: '$ZKQ_HTTP_AUTH',
          describe: 'Credentials for the board: basic:user:password or bearer:token',
        })
        .option('json', { type: 'boolean', default: false, describe: 'Print the address as JSON' })
        .example('$0 dashboard', 'Every queue, at http://127.0.0.1:3000/')
        .example('$0 dashboard emails reports --port 8080', 'Two queues on port 8080')
        .example('$0 dashboard --host 0.0.0.0 --allowed-host jobs.example.com', 'On every interface, read-only')
        .example('ZKQ_HTTP_AUTH=bearer:s3cret $0 dashboard --host 0.0.0.0', 'On every interface, with a token'),
    async (argv) => {
      if (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535) {
        throw new UsageError('--port must be a port number (0: any free port)');
      }
      const log = createLogger(argv, 'stderr');
      const auth = dashboardAuthOf(argv.httpAuth);
      const allowedHosts = (argv.allowedHost ?? []).map((h) => String(h).trim()).filter((h) => h !== '');
      const exposed = !isLoopbackAddress(argv.host);
      // beyond loopback, anyone who can reach the port could act: look only, unless told otherwise
      const readOnly = argv.readOnly ?? (exposed && !auth);
      if (exposed && !auth && !readOnly) {
        log.warn({ host: argv.host }, 'the dashboard accepts writes on a non-loopback address without credentials');
      }
      // the address it is bound to is a name it is reached by (a wildcard address is not)
      const bound = argv.host.includes(':') ? `[${argv.host}]` : argv.host;
      if (exposed && !allowedHosts.includes(bound) && argv.host !== '0.0.0.0' && argv.host !== '::') {
        allowedHosts.push(bound);
      }
      const names = (argv.queues ?? []).map(String);
      for (const name of names) await assertQueueExists(argv, name);
      const stopped = nextSignal();
      // loaded here, not at start-up: bull-board, express and BullMQ cost every other command nothing
      const [{ createZooKeeperDashboard }, { default: express }] = await Promise.all([
        import('../dashboard.js'),
        import('express'),
      ]);
      const dashboard = await createZooKeeperDashboard({
        connection: { ...connectionOf(argv), namespace: prefixOf(argv) },
        ...(names.length > 0 ? { queues: names } : {}),
        readOnly,
        allowedHosts,
        ...(auth ? { auth } : {}),
      });
      let server: Server | undefined;
      try {
        const app = express();
        app.use('/', dashboard.router);
        server = await listen(app, argv.port, argv.host);
        const address = server.address();
        const port = typeof address === 'object' && address ? address.port : argv.port;
        const host = argv.host.includes(':') ? `[${argv.host}]` : argv.host;
        const url = `http://${host}:${port}/`;
        const mode = `${readOnly ? 'read-only' : 'read-write'}${auth ? `, ${auth.kind} auth` : ''}`;
        if (argv.json) {
          printJson({
            url,
            namespace: prefixOf(argv),
            queues: dashboard.queues(),
            readOnly,
            hosts: [...LOOPBACK_HOSTS.filter((h) => h !== '::1'), ...allowedHosts],
          });
        } else {
          println(
            `dashboard is serving at ${url} (${plural(dashboard.queues().length, 'queue')} under /${prefixOf(argv)})`,
          );
          println(`${mode}; answers to ${[...LOOPBACK_HOSTS.filter((h) => h !== '::1'), ...allowedHosts].join(', ')}`);
        }
        const refusal = dashboard.refusal();
        if (refusal) log.warn({ namespace: prefixOf(argv) }, refusal);
        const signal = await stopped;
        log.info({ signal }, 'stopping the dashboard');
      } finally {
        server?.closeAllConnections();
        await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
        await dashboard.close();
      }
    },
  );
}
