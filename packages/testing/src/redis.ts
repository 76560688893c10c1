/**
 * A real Redis server for the benchmark, which runs BullMQ beside zkq.
 *
 * `startRedis()` spawns `redis-server` on a free loopback port in a temporary
 * directory of its own, without persistence (`--save '' --appendonly no`) or,
 * with `appendfsync`, with its append-only file on (`--appendonly yes
 * --appendfsync always` fsyncs every write, ZooKeeper's durability), waits
 * until it answers PING, and kills it when the Node process exits. When
 * redis-server is missing, `bin/install-redis.sh` installs Debian's package as
 * root, or says exactly what to run and fails.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { accessSync, closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';

const INSTALL_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'install-redis.sh');
const DEFAULT_START_TIMEOUT_MS = 20_000;

/** Raised when no redis-server can be found or installed; its message says what to do. */
export class RedisNotInstalledError extends Error {
  readonly code = 'ZKQ_REDIS_NOT_INSTALLED';
  constructor(message: string) {
    super(message);
    this.name = 'RedisNotInstalledError';
  }
}

/** Raised by `startRedis()` for an option it does not know, before anything is started. */
export class RedisOptionError extends TypeError {
  readonly code = 'ZKQ_REDIS_BAD_OPTION';
  constructor(message: string) {
    super(message);
    this.name = 'RedisOptionError';
  }
}

/** Raised when a server does not come up; `log` holds the end of its log. */
export class RedisStartError extends Error {
  readonly code = 'ZKQ_REDIS_START_FAILED';
  constructor(
    message: string,
    readonly log: string,
  ) {
    super(`${message}\n--- server log (tail) ---\n${log}`);
    this.name = 'RedisStartError';
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The redis-server binary (`REDIS_SERVER`, else the first on PATH), or undefined. */
export function findRedisServer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.REDIS_SERVER) return executable(env.REDIS_SERVER) ? env.REDIS_SERVER : undefined;
  const dirs = [...(env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'];
  return dirs.map((d) => join(d, 'redis-server')).find(executable);
}

/** The redis-server binary, installing it first when missing and `install` is true (the default). */
export function ensureRedis(options: { install?: boolean } = {}): string {
  const found = findRedisServer();
  if (found) return found;
  if (options.install === false) {
    throw new RedisNotInstalledError(`redis-server is not installed. Run: bash ${INSTALL_SCRIPT}`);
  }
  try {
    execFileSync('bash', [INSTALL_SCRIPT], { stdio: ['ignore', 'inherit', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new RedisNotInstalledError(stderr || `redis-server could not be installed by ${INSTALL_SCRIPT}`);
  }
  const installed = findRedisServer();
  if (!installed) throw new RedisNotInstalledError(`${INSTALL_SCRIPT} ran but no redis-server was found`);
  return installed;
}

/**
 * Sends one command to a Redis server and resolves with its reply: the text of
 * a simple or bulk string, an integer as text. An error reply rejects.
 */
export function redisCommand(port: number, args: readonly string[], timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    let input = Buffer.alloc(0);
    const sock = connect({ host: '127.0.0.1', port });
    const done = (err: Error | undefined, value?: string) => {
      sock.destroy();
      if (err) reject(err);
      else resolve(value ?? '');
    };
    sock.setTimeout(timeoutMs, () => done(new Error(`redis ${args[0]}: no reply within ${timeoutMs} ms`)));
    sock.on('connect', () =>
      sock.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`),
    );
    sock.on('data', (chunk) => {
      input = Buffer.concat([input, chunk]);
      const eol = input.indexOf('\r\n');
      if (eol < 0) return;
      const head = input.subarray(1, eol).toString();
      switch (input[0]) {
        case 0x2b /* + */:
        case 0x3a /* : */:
          return done(undefined, head);
        case 0x2d /* - */:
          return done(new Error(`redis ${args[0]}: ${head}`));
        case 0x24 /* $ */:
          {
            const len = Number(head);
            if (len < 0) return done(undefined, '');
            if (input.length >= eol + 2 + len) done(undefined, input.subarray(eol + 2, eol + 2 + len).toString());
            return;
          }
        default:
          return done(new Error(`redis ${args[0]}: unexpected reply ${JSON.stringify(head)}`));
      }
    });
    sock.on('error', (err) => done(err));
  });
}

/** `INFO <section>` as a map of its `name:value` lines. */
export async function redisInfo(port: number, section = 'all'): Promise<Record<string, string>> {
  const text = await redisCommand(port, ['INFO', section]);
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

export interface RedisServerOptions {
  /** Install redis-server when it is missing (as root through apt-get). Default true. */
  install?: boolean;
  /** Milliseconds to wait for the server to answer PING. Default 20000. */
  startTimeoutMs?: number;
  /** Port to listen on. Default: a free one. */
  port?: number;
  /**
   * Turn the append-only file on with this fsync policy (`always`: every write is on disk before
   * its reply). Default: no persistence at all.
   */
  appendfsync?: RedisAppendFsync;
}

/** Redis's fsync policies of the append-only file. */
export type RedisAppendFsync = 'always' | 'everysec' | 'no';
const APPEND_FSYNC: readonly RedisAppendFsync[] = ['always', 'everysec', 'no'];

/** A running Redis server on loopback. */
export interface RedisServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly pid: number | undefined;
  readonly process: ChildProcess;
  /** Kills the server and removes its temporary directory. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Starts redis-server on a free loopback port (persistence as asked) and waits until it answers PING. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const { appendfsync } = options;
  if (appendfsync !== undefined && !APPEND_FSYNC.includes(appendfsync)) {
    throw new RedisOptionError(`appendfsync must be one of ${APPEND_FSYNC.join(', ')} (got ${String(appendfsync)})`);
  }
  const binary = ensureRedis({ install: options.install ?? true });
  const dir = mkdtempSync(join(tmpdir(), 'zkq-redis-'));
  const port = options.port ?? (await freePort());
  const logFile = join(dir, 'redis.log');
  const fd = openSync(logFile, 'a');
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir];
  args.push('--save', '', '--daemonize', 'no', '--logfile', '');
  args.push(...(appendfsync ? ['--appendonly', 'yes', '--appendfsync', appendfsync] : ['--appendonly', 'no']));
  const child = spawn(binary, args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  live.add(child);
  child.once('exit', () => live.delete(child));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const logTail = () => {
    try {
      return readFileSync(logFile, 'utf8').slice(-4000);
    } catch {
      return '(no log)';
    }
  };
  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const log = logTail();
      await stop();
      throw new RedisStartError('redis-server exited during start', log);
    }
    if ((await redisCommand(port, ['PING'], 1000).catch(() => '')) === 'PONG') break;
    if (Date.now() > deadline) {
      const log = logTail();
      await stop();
      throw new RedisStartError(`redis-server did not answer within ${timeoutMs} ms`, log);
    }
    await sleep(50);
  }
  return { host: '127.0.0.1', port, pid: child.pid, process: child, stop };
}
