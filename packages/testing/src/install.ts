/**
 * Locating (and, when allowed, installing) the ZooKeeper server jars.
 *
 * A user's own install wins (`ZOOKEEPER_HOME`); otherwise Debian's `zookeeper`
 * package. When neither is present, `bin/install-zookeeper.sh` installs the
 * Debian package as root, or says exactly what to run and fails.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DEBIAN_JAR_DIR = '/usr/share/java';
const INSTALL_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'install-zookeeper.sh');

/** Raised when no ZooKeeper can be found or installed; its message says what to do. */
export class ZooKeeperNotInstalledError extends Error {
  readonly code = 'ZKQ_ZOOKEEPER_NOT_INSTALLED';
  constructor(message: string) {
    super(message);
    this.name = 'ZooKeeperNotInstalledError';
  }
}

function jarsIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jar'))
    .map((f) => join(dir, f));
}

/** The server classpath, or undefined when ZooKeeper is not installed. */
export function findZooKeeperClasspath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const home = env.ZOOKEEPER_HOME;
  if (home) {
    const jars = [...jarsIn(join(home, 'lib')), ...jarsIn(home)];
    return jars.some((j) => /zookeeper-\d/.test(j)) ? jars.join(':') : undefined;
  }
  const main = join(DEBIAN_JAR_DIR, 'zookeeper.jar');
  if (!existsSync(main)) return undefined;
  // zookeeper.jar's manifest pulls in netty, jackson, slf4j-api...; jute and a
  // logging binding are not in it.
  const extra = ['zookeeper-jute.jar', 'slf4j-simple.jar'].map((j) => join(DEBIAN_JAR_DIR, j));
  return [main, ...extra.filter(existsSync)].join(':');
}

/**
 * The server classpath, installing ZooKeeper first when it is missing and
 * `install` is true (the default).
 */
export function ensureZooKeeper(options: { install?: boolean } = {}): string {
  const found = findZooKeeperClasspath();
  if (found) return found;
  if (options.install === false) {
    throw new ZooKeeperNotInstalledError(
      `ZooKeeper is not installed. Run: bash ${INSTALL_SCRIPT} (or set ZOOKEEPER_HOME)`,
    );
  }
  try {
    execFileSync('bash', [INSTALL_SCRIPT], { stdio: ['ignore', 'inherit', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new ZooKeeperNotInstalledError(stderr || `ZooKeeper could not be installed by ${INSTALL_SCRIPT}`);
  }
  const installed = findZooKeeperClasspath();
  if (!installed) throw new ZooKeeperNotInstalledError(`${INSTALL_SCRIPT} ran but no ZooKeeper jars were found`);
  return installed;
}

/** The Netty jars a TLS server needs (Debian's zookeeper.jar manifest does not name them all). */
const NETTY_JARS = [
  'buffer',
  'codec',
  'common',
  'handler',
  'resolver',
  'transport',
  'transport-native-unix-common',
  'transport-native-epoll',
];

/** The Netty jars for a server's secure client port (from ZOOKEEPER_HOME's lib when set, else Debian's). */
export function nettyClasspath(env: NodeJS.ProcessEnv = process.env): string[] {
  if (env.ZOOKEEPER_HOME) return jarsIn(join(env.ZOOKEEPER_HOME, 'lib')).filter((j) => /netty-/.test(j));
  return NETTY_JARS.map((name) => join(DEBIAN_JAR_DIR, `netty-${name}.jar`)).filter(existsSync);
}
