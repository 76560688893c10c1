/**
 * Locating (and, when allowed, installing) a Chromium for browser tests.
 *
 * `CHROMIUM_PATH` wins; otherwise Debian's `chromium` package. When neither is
 * there, as root with apt-get it installs the Debian package; otherwise it
 * fails saying exactly what to run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
const INSTALL_HINT =
  'sudo apt-get update && sudo apt-get install -y chromium (or set CHROMIUM_PATH to a Chromium binary)';

/** Raised when no Chromium can be found or installed; its message says what to do. */
export class ChromiumNotInstalledError extends Error {
  readonly code = 'ZKQ_CHROMIUM_NOT_INSTALLED';
  constructor(message: string) {
    super(message);
    this.name = 'ChromiumNotInstalledError';
  }
}

/** The Chromium binary, or undefined when none is installed (`candidates`: where to look, for tests). */
export function findChromium(env: NodeJS.ProcessEnv = process.env, candidates = CANDIDATES): string | undefined {
  if (env.CHROMIUM_PATH) return existsSync(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
  return candidates.find((c) => existsSync(c));
}

/** Where ensureChromium looks and what it runs; tests point them at a scratch machine. */
export interface ChromiumSystem {
  candidates: string[];
  aptGet: string;
  isRoot: boolean;
  env: NodeJS.ProcessEnv;
}

function thisMachine(): ChromiumSystem {
  return { candidates: CANDIDATES, aptGet: '/usr/bin/apt-get', isRoot: process.getuid?.() === 0, env: process.env };
}

/**
 * The Chromium binary, installing Debian's `chromium` first when it is
 * missing, `install` is true (the default), and this process is root with
 * apt-get; otherwise ChromiumNotInstalledError with the command to run.
 */
export function ensureChromium(options: { install?: boolean; system?: Partial<ChromiumSystem> } = {}): string {
  const sys = { ...thisMachine(), ...options.system };
  const found = findChromium(sys.env, sys.candidates);
  if (found) return found;
  if (sys.env.CHROMIUM_PATH) {
    throw new ChromiumNotInstalledError(`CHROMIUM_PATH=${sys.env.CHROMIUM_PATH} does not exist`);
  }
  if (options.install === false) throw new ChromiumNotInstalledError(`Chromium is not installed. Run: ${INSTALL_HINT}`);
  if (!sys.isRoot || !existsSync(sys.aptGet)) {
    throw new ChromiumNotInstalledError(
      `Chromium is not installed, and it can be installed here only as root on Debian/Ubuntu. Run: ${INSTALL_HINT}`,
    );
  }
  process.stderr.write('Chromium is not installed: running apt-get update && apt-get install -y chromium\n');
  const env = { ...sys.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync(sys.aptGet, ['update'], { stdio: ['ignore', 'ignore', 'pipe'], env });
    execFileSync(sys.aptGet, ['install', '-y', '--no-install-recommends', 'chromium'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
    });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new ChromiumNotInstalledError(`apt-get could not install chromium (${stderr || err}). Run: ${INSTALL_HINT}`);
  }
  const installed = findChromium(sys.env, sys.candidates);
  if (!installed)
    throw new ChromiumNotInstalledError(`apt-get installed chromium but no binary was found. Run: ${INSTALL_HINT}`);
  return installed;
}
