/**
 * Global options shared by every command, and what commands build from
 * them: connection options, a Queue, a raw session in the namespace.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions, Session, TlsOptions } from '@zkq/core';
import { openSession } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import type { Argv } from 'yargs';
import { UsageError } from './errors.js';

export const DEFAULT_ZK = '127.0.0.1:2181';
export const DEFAULT_NAMESPACE = 'zkq';
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

export type LogFormat = 'json' | 'pretty';

/** Options every command accepts. */
export interface GlobalArgs {
  zk: string;
  namespace: string;
  auth: string | undefined;
  acl: 'open' | 'creator' | undefined;
  tlsCa: string | undefined;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  sasl: string | undefined;
  connectTimeout: number;
  sessionTimeout: number | undefined;
  logLevel: string | undefined;
  logFormat: LogFormat | undefined;
  verbose: boolean;
}

/** Options of every command: logging. */
export function globalOptions(y: Argv): Argv<GlobalArgs> {
  return y
    .option('log-level', {
      choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      describe: 'Log level (default info; debug with --verbose)',
      global: true,
    })
    .option('log-format', {
      choices: ['json', 'pretty'] as const,
      describe: 'Log format (default: pretty on a terminal, JSON otherwise)',
      global: true,
    })
    .option('verbose', {
      alias: 'v',
      type: 'boolean',
      default: false,
      describe: 'Debug logs, and stack traces with errors',
      global: true,
    }) as unknown as Argv<GlobalArgs>;
}

const ZOOKEEPER_GROUP = 'ZooKeeper options:';

const NAMESPACE_OPTION = {
  type: 'string',
  default: DEFAULT_NAMESPACE,
  describe: 'Root node every queue lives under (the queue prefix)',
  global: false,
} as const;

/** The namespace option alone, for commands that start their own server (`demo`). */
export function namespaceOption<T>(y: Argv<T>): Argv<T> {
  return y.option('namespace', NAMESPACE_OPTION).group(['namespace'], ZOOKEEPER_GROUP);
}

/**
 * The options of commands that talk to a ZooKeeper (all but `dev-server`).
 * Not global: a command that does not use them refuses them. Called after
 * the positionals, so that help lists the command's own options first.
 */
export function zooKeeperOptions<T>(y: Argv<T>): Argv<T> {
  return y
    .group([], 'Options:')
    .option('zk', {
      type: 'string',
      default: process.env.ZKQ_ZK || DEFAULT_ZK,
      defaultDescription: `$ZKQ_ZK or ${DEFAULT_ZK}`,
      describe: 'ZooKeeper connection string, host:port[,host:port...]',
      global: false,
    })
    .option('namespace', NAMESPACE_OPTION)
    .option('auth', {
      type: 'string',
      default: process.env.ZKQ_AUTH || undefined,
      defaultDescription: '$ZKQ_AUTH',
      describe: 'Digest credentials user:password (nodes are then created creator-only)',
      global: false,
    })
    .option('acl', {
      choices: ['open', 'creator'] as const,
      describe: 'ACL of created nodes (default: creator with --auth, open without)',
      global: false,
    })
    .option('sasl', {
      type: 'string',
      default: process.env.ZKQ_SASL || undefined,
      defaultDescription: '$ZKQ_SASL',
      describe: 'SASL DIGEST-MD5 credentials user:password (nodes are then created creator-only)',
      global: false,
    })
    .option('tls-ca', {
      type: 'string',
      default: process.env.ZKQ_TLS_CA || undefined,
      defaultDescription: '$ZKQ_TLS_CA',
      describe: "TLS to ZooKeeper's secure port: PEM file of the CA that signs the servers' certificates",
      global: false,
    })
    .option('tls-cert', {
      type: 'string',
      default: process.env.ZKQ_TLS_CERT || undefined,
      defaultDescription: '$ZKQ_TLS_CERT',
      describe: "TLS: this client's certificate, PEM file (its x509 identity); with --tls-key",
      global: false,
    })
    .option('tls-key', {
      type: 'string',
      default: process.env.ZKQ_TLS_KEY || undefined,
      defaultDescription: '$ZKQ_TLS_KEY',
      describe: "TLS: the client certificate's private key, PEM file",
      global: false,
    })
    .option('connect-timeout', {
      type: 'number',
      default: DEFAULT_CONNECT_TIMEOUT_MS,
      describe: 'Give up connecting to ZooKeeper after this many ms',
      global: false,
    })
    .option('session-timeout', {
      type: 'number',
      describe: 'Requested ZooKeeper session timeout, ms (default 30000)',
      global: false,
    })
    .group(
      ['zk', 'namespace', 'auth', 'sasl', 'acl', 'tls-ca', 'tls-cert', 'tls-key', 'connect-timeout', 'session-timeout'],
      ZOOKEEPER_GROUP,
    );
}

/** Connection options from the global options. */
export function connectionOf(args: GlobalArgs): ConnectionOptions {
  if (!args.zk?.trim()) throw new UsageError('--zk must be a connection string like 127.0.0.1:2181');
  if (args.auth !== undefined && !args.auth.includes(':')) throw new UsageError('--auth must be user:password');
  const sasl = args.sasl === undefined ? undefined : /^([^:]+):(.*)$/s.exec(args.sasl);
  if (args.sasl !== undefined && !sasl) throw new UsageError('--sasl must be user:password');
  positive(args.connectTimeout, '--connect-timeout');
  if (args.sessionTimeout !== undefined) positive(args.sessionTimeout, '--session-timeout');
  return {
    connectionString: args.zk,
    connectTimeout: args.connectTimeout,
    ...(args.sessionTimeout !== undefined ? { sessionTimeout: args.sessionTimeout } : {}),
    ...(args.auth ? { auth: args.auth } : {}),
    ...(sasl ? { sasl: { username: sasl[1] as string, password: sasl[2] as string } } : {}),
    ...(args.acl ? { acl: args.acl } : {}),
    ...tlsOf(args),
  };
}

/** TLS options from --tls-ca, --tls-cert and --tls-key (files read here); none of them: no TLS. */
function tlsOf(args: GlobalArgs): { tls?: TlsOptions } {
  if (!args.tlsCa && !args.tlsCert && !args.tlsKey) return {};
  if (Boolean(args.tlsCert) !== Boolean(args.tlsKey)) throw new UsageError('--tls-cert and --tls-key go together');
  const read = (file: string, option: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      const why = (err as { code?: unknown }).code === 'ENOENT' ? 'no such file' : String((err as Error).message);
      throw new UsageError(`${option}: cannot read ${file}: ${why}`);
    }
  };
  return {
    tls: {
      ...(args.tlsCa ? { ca: read(args.tlsCa, '--tls-ca') } : {}),
      ...(args.tlsCert && args.tlsKey
        ? { cert: read(args.tlsCert, '--tls-cert'), key: read(args.tlsKey, '--tls-key') }
        : {}),
    },
  };
}

/** The namespace as a queue prefix (no leading slash). */
export function prefixOf(args: GlobalArgs): string {
  return args.namespace.replace(/^\/+/, '') || DEFAULT_NAMESPACE;
}

/** Throws UsageError unless `v` is a finite number > 0. */
export function positive(v: number | undefined, name: string): void {
  if (v === undefined || !Number.isFinite(v) || v <= 0) throw new UsageError(`${name} must be a number > 0`);
}

/** Throws UsageError unless `v` is an integer >= min. */
export function integer(v: number | undefined, name: string, min = 1): void {
  if (v === undefined || !Number.isInteger(v) || v < min) throw new UsageError(`${name} must be an integer >= ${min}`);
}

/** Opens the queue and waits until it is connected; closes it after `fn`. */
export async function withQueue<T>(args: GlobalArgs, name: string, fn: (queue: Queue) => Promise<T>): Promise<T> {
  const queue = new Queue(name, { connection: connectionOf(args), prefix: prefixOf(args) });
  try {
    await queue.waitUntilReady();
    return await fn(queue);
  } finally {
    await queue.close();
  }
}

/** Opens a raw session rooted at the namespace; closes it after `fn`. */
export async function withSession<T>(args: GlobalArgs, fn: (session: Session) => Promise<T>): Promise<T> {
  const session = await openSession(connectionOf(args), prefixOf(args));
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/** Node names the CLI accepts for barriers and locks. */
export function checkNodeName(name: string, what: string): void {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(name) || name === '.' || name === '..') {
    throw new UsageError(`invalid ${what} name '${name}': use 1-100 characters of A-Z a-z 0-9 . _ -`);
  }
}
