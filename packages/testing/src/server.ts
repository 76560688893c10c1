/**
 * Real ZooKeeper servers for tests, benchmarks and `zkq dev-server`.
 *
 * Each server is a JVM (`QuorumPeerMain`) in its own temporary directory,
 * listening on free loopback ports only. `startZooKeeper()` gives a
 * standalone server, `startEnsemble()` a 3-server quorum whose members can
 * be stopped and restarted one by one. Every JVM started here is killed when
 * the Node process exits, also when a test fails; a start that fails shows
 * the end of the server's log.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestCertificates } from './certificates.js';
import { fourLetterWord } from './four-letter.js';
import { ensureZooKeeper, nettyClasspath } from './install.js';
import { freePorts } from './ports.js';

/** How a test server is configured. Defaults suit tests on a small machine. */
export interface ZooKeeperServerOptions {
  /** fsync every transaction log write (ZooKeeper's default, and ours). */
  fsync?: boolean;
  /** Milliseconds per tick; session timeouts are bounded to 2..20 ticks unless set below. Default 500. */
  tickTime?: number;
  /** Lowest session timeout the server grants, ms. Default 2 × tickTime. */
  minSessionTimeout?: number;
  /** Highest session timeout the server grants, ms. Default 60000. */
  maxSessionTimeout?: number;
  /** JVM heap in MiB. Default 1024. */
  heapMb?: number;
  /** Use this data directory instead of a fresh temporary one (kept on stop). */
  dataDir?: string;
  /** Install ZooKeeper when it is missing (as root through apt-get). Default true. */
  install?: boolean;
  /** Milliseconds to wait for the server to serve. Default 60000. */
  startTimeoutMs?: number;
  /** Client port of a standalone server (e.g. 2181 for a dev server). Default: a free port. */
  clientPort?: number;
  /**
   * More zoo.cfg settings, written after (and so overriding) the harness's own,
   * e.g. `{ 'enforce.auth.enabled': true }`. A value of `null` drops a setting.
   */
  config?: Record<string, string | number | boolean | null>;
  /** More JVM flags, e.g. `-Djava.security.auth.login.config=/path/jaas.conf`. */
  jvmFlags?: readonly string[];
  /** More jars on the server's classpath. */
  classpath?: readonly string[];
  /** Serve TLS on a secure client port (Netty); `connectionString` is then that port's. */
  tls?: ServerTlsOptions;
}

/** A server's TLS: its certificates, and whether clients must present one. */
export interface ServerTlsOptions {
  /** From `makeTestCertificates()`: the key and trust stores, and the client certificate the harness probes with. */
  certificates: TestCertificates;
  /**
   * `need`: a client without a certificate signed by the CA is refused;
   * `want` (default): asked for, not required; `none`. A client's certificate
   * is its `x509` identity (X509AuthenticationProvider).
   */
  clientAuth?: 'need' | 'want' | 'none';
  /** Keep the plain client port as well. Default false: TLS only. */
  plainPort?: boolean;
}

const DEFAULT_TICK_MS = 500;
const DEFAULT_MAX_SESSION_MS = 60_000;
const DEFAULT_HEAP_MB = 1024;
const DEFAULT_START_TIMEOUT_MS = 60_000;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Raised when a server does not come up; `log` holds the end of its log. */
export class ZooKeeperStartError extends Error {
  readonly code = 'ZKQ_ZOOKEEPER_START_FAILED';
  constructor(
    message: string,
    readonly log: string,
  ) {
    super(`${message}\n--- server log (tail) ---\n${log}`);
    this.name = 'ZooKeeperStartError';
  }
}

interface PeerConfig {
  dir: string;
  clientPort: number;
  /** The TLS port, with `options.tls`. */
  securePort?: number;
  myid?: number;
  peers?: string[];
}

/** One ZooKeeper JVM: start, stop (SIGKILL or graceful), restart on the same data. */
export class ZooKeeperProcess {
  private child: ChildProcess | undefined;
  private readonly logFile: string;
  private readonly configFile: string;

  constructor(
    private readonly config: PeerConfig,
    private readonly options: ZooKeeperServerOptions,
    private readonly classpath: string,
  ) {
    this.logFile = join(config.dir, 'server.log');
    this.configFile = join(config.dir, 'zoo.cfg');
    this.writeConfig();
  }

  /** `127.0.0.1:<port>` of this server alone (its TLS port with `tls`). */
  get connectionString(): string {
    return `127.0.0.1:${this.config.securePort ?? this.config.clientPort}`;
  }

  get clientPort(): number {
    return this.config.clientPort;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private writeConfig(): void {
    const o = this.options;
    const tick = o.tickTime ?? DEFAULT_TICK_MS;
    const lines = [
      `tickTime=${tick}`,
      `dataDir=${join(this.config.dir, 'data')}`,
      `clientPort=${this.config.clientPort}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      '4lw.commands.whitelist=*',
      'maxClientCnxns=0',
      `minSessionTimeout=${o.minSessionTimeout ?? tick * 2}`,
      `maxSessionTimeout=${o.maxSessionTimeout ?? DEFAULT_MAX_SESSION_MS}`,
      `forceSync=${o.fsync === false ? 'no' : 'yes'}`,
      'autopurge.purgeInterval=0',
    ];
    if (this.config.peers) {
      lines.push('initLimit=20', 'syncLimit=10', 'electionPortBindRetry=20', ...this.config.peers);
    }
    if (o.tls) lines.push(...tlsConfig(o.tls, this.config.securePort as number));
    if (o.tls && !o.tls.plainPort) lines.splice(lines.indexOf(`clientPort=${this.config.clientPort}`), 2);
    for (const [key, value] of Object.entries(o.config ?? {})) {
      const at = lines.findIndex((line) => line.startsWith(`${key}=`));
      if (at >= 0) lines.splice(at, 1);
      if (value !== null) lines.push(`${key}=${String(value)}`);
    }
    mkdirSync(join(this.config.dir, 'data'), { recursive: true });
    if (this.config.myid !== undefined) writeFileSync(join(this.config.dir, 'data', 'myid'), `${this.config.myid}\n`);
    writeFileSync(this.configFile, `${lines.join('\n')}\n`);
  }

  /** Spawns the JVM; resolves once it serves (`waitServing`). */
  start(): void {
    if (this.running) return;
    const fd = openSync(this.logFile, 'a');
    const heap = this.options.heapMb ?? DEFAULT_HEAP_MB;
    const args = [
      `-Xmx${heap}m`,
      '-XX:+UseSerialGC',
      '-Dzookeeper.admin.enableServer=false',
      '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
      ...(this.options.jvmFlags ?? []),
      '-cp',
      [this.classpath, ...(this.options.tls ? nettyClasspath() : []), ...(this.options.classpath ?? [])].join(':'),
      'org.apache.zookeeper.server.quorum.QuorumPeerMain',
      this.configFile,
    ];
    const child = spawn('java', args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    live.add(child);
    child.once('exit', () => live.delete(child));
    this.child = child;
  }

  /**
   * Lets the Node process exit while this server runs (it is still killed on
   * exit). For a server that lives as long as its process, like a test file's
   * private shared server.
   */
  unref(): void {
    this.child?.unref();
  }

  /** Last `bytes` of the server log. */
  logTail(bytes = 4000): string {
    try {
      const text = readFileSync(this.logFile, 'utf8');
      return text.slice(-bytes);
    } catch {
      return '(no log)';
    }
  }

  /** The `Mode:` line of `srvr`, or undefined when the server does not answer. */
  async mode(): Promise<string | undefined> {
    const tls = this.options.tls;
    try {
      const reply =
        tls && !tls.plainPort
          ? await fourLetterWord(this.config.securePort as number, 'srvr', 1000, probeTls(tls))
          : await fourLetterWord(this.config.clientPort, 'srvr', 1000);
      return /Mode: (\S+)/.exec(reply)?.[1];
    } catch {
      return undefined;
    }
  }

  /** Waits until the server reports a serving mode (standalone, leader, follower). */
  async waitServing(timeoutMs = this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new ZooKeeperStartError('ZooKeeper exited during start', this.logTail());
      const mode = await this.mode();
      if (mode === 'standalone' || mode === 'leader' || mode === 'follower') return;
      await sleep(100);
    }
    throw new ZooKeeperStartError(`ZooKeeper did not serve within ${timeoutMs} ms`, this.logTail());
  }

  /** Stops the JVM: SIGKILL by default (a crash), SIGTERM with `graceful`. */
  async stop(options: { graceful?: boolean } = {}): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(options.graceful ? 'SIGTERM' : 'SIGKILL');
    await exited;
  }

  /** Starts the JVM again on the same data and ports, and waits until it serves. */
  async restart(): Promise<void> {
    await this.stop();
    this.start();
    await this.waitServing();
  }
}

function tlsConfig(tls: ServerTlsOptions, port: number): string[] {
  const c = tls.certificates;
  return [
    `secureClientPort=${port}`,
    'secureClientPortAddress=127.0.0.1',
    'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
    `ssl.keyStore.location=${c.keyStore}`,
    `ssl.keyStore.password=${c.password}`,
    'ssl.keyStore.type=PKCS12',
    `ssl.trustStore.location=${c.trustStore}`,
    `ssl.trustStore.password=${c.password}`,
    'ssl.trustStore.type=PKCS12',
    `ssl.clientAuth=${tls.clientAuth ?? 'want'}`,
    'authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider',
  ];
}

/** How the harness itself talks to a TLS-only server (readiness probes): the CA and the client certificate. */
function probeTls(tls: ServerTlsOptions) {
  const c = tls.certificates;
  return {
    ca: readFileSync(c.ca),
    cert: readFileSync(c.client.cert),
    key: readFileSync(c.client.key),
    servername: 'localhost',
  };
}

/** A running standalone server. */
export interface ZooKeeperServer {
  /** Connection string for clients, `127.0.0.1:<port>`. */
  readonly connectionString: string;
  readonly process: ZooKeeperProcess;
  /** Kills the JVM and removes its temporary directory. */
  stop(): Promise<void>;
}

function tempDir(prefix: string, given?: string): { dir: string; owned: boolean } {
  if (given) {
    mkdirSync(given, { recursive: true });
    return { dir: given, owned: false };
  }
  return { dir: mkdtempSync(join(tmpdir(), prefix)), owned: true };
}

/** Starts a standalone ZooKeeper on a free loopback port and waits until it serves. */
export async function startZooKeeper(options: ZooKeeperServerOptions = {}): Promise<ZooKeeperServer> {
  const classpath = ensureZooKeeper({ install: options.install ?? true });
  const { dir, owned } = tempDir('zkq-zk-', options.dataDir);
  const [free, securePort] = await freePorts(2);
  const clientPort = options.clientPort ?? free;
  const proc = new ZooKeeperProcess(
    { dir, clientPort: clientPort as number, ...(options.tls ? { securePort } : {}) },
    options,
    classpath,
  );
  proc.start();
  try {
    await proc.waitServing();
  } catch (err) {
    await proc.stop();
    if (owned) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    connectionString: proc.connectionString,
    process: proc,
    async stop() {
      await proc.stop();
      if (owned) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A running 3-server (or `size`) quorum on loopback. */
export interface ZooKeeperEnsemble {
  /** All members, `127.0.0.1:a,127.0.0.1:b,127.0.0.1:c`. */
  readonly connectionString: string;
  readonly servers: readonly ZooKeeperProcess[];
  /** Kills every member and removes the temporary directory. */
  stop(): Promise<void>;
}

/** Starts an ensemble of `size` servers (default 3) and waits until all serve. */
export async function startEnsemble(
  options: ZooKeeperServerOptions & { size?: number } = {},
): Promise<ZooKeeperEnsemble> {
  const size = options.size ?? 3;
  const classpath = ensureZooKeeper({ install: options.install ?? true });
  const { dir, owned } = tempDir('zkq-ensemble-', options.dataDir);
  const ports = await freePorts(size * 4);
  const peers = Array.from(
    { length: size },
    (_, i) => `server.${i + 1}=127.0.0.1:${ports[size + i * 2]}:${ports[size + i * 2 + 1]}`,
  );
  const servers = Array.from(
    { length: size },
    (_, i) =>
      new ZooKeeperProcess(
        {
          dir: join(dir, `server-${i + 1}`),
          clientPort: ports[i] as number,
          myid: i + 1,
          peers,
          ...(options.tls ? { securePort: ports[size * 3 + i] as number } : {}),
        },
        options,
        classpath,
      ),
  );
  const stopAll = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    if (owned) rmSync(dir, { recursive: true, force: true });
  };
  for (const s of servers) s.start();
  try {
    await Promise.all(servers.map((s) => s.waitServing()));
  } catch (err) {
    await stopAll();
    throw err;
  }
  return { connectionString: servers.map((s) => s.connectionString).join(','), servers, stop: stopAll };
}
