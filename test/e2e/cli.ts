/**
 * Helpers for end-to-end tests of the built `zkq` binary: run it to
 * completion, or start it as a daemon and wait on its output and exit.
 * Every test gets its own namespace on the run's shared ZooKeeper.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sharedZooKeeper, uniqueRoot } from '@zkq/testing';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../../packages/cli/dist/bin.js', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('../fixtures/cli/', import.meta.url));
export const EXAMPLES = fileURLToPath(new URL('../../examples/processors/', import.meta.url));

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliEnv {
  zk: string;
  namespace: string;
  /** `--zk=<zk> --namespace=<namespace>` */
  global: string[];
}

/** The shared server and a fresh namespace for one test. */
export async function cliEnv(t: { name?: string }): Promise<CliEnv> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
  const zk = await sharedZooKeeper();
  const namespace = uniqueRoot(t.name ?? 'cli').slice(1);
  return { zk, namespace, global: [`--zk=${zk}`, `--namespace=${namespace}`] };
}

/** This process's environment without zkq's own variables (a test sets those it means), then `extra`. */
function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['ZKQ_AUTH', 'ZKQ_ZK', 'ZKQ_SASL', 'ZKQ_TLS_CA', 'ZKQ_TLS_CERT', 'ZKQ_TLS_KEY']) delete env[name];
  return { ...env, ...extra };
}

/** Runs `zkq <args>` to its end (killed after `timeoutMs`). */
export function zkq(
  args: string[],
  opts: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<RunResult> {
  const p = new ZkqProcess(args, opts);
  if (opts.input !== undefined) p.child.stdin?.end(opts.input);
  else p.child.stdin?.end();
  const timer = setTimeout(() => p.child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
  return p.exited.finally(() => clearTimeout(timer));
}

/** Runs `zkq <args>` and parses its stdout as JSON; fails with its stderr when it exits non-zero. */
export async function zkqJson<T = any>(args: string[], opts: { input?: string } = {}): Promise<T> {
  const r = await zkq([...args, '--json'], opts);
  if (r.code !== 0) throw new Error(`zkq ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** A running `zkq` process whose output lines can be awaited. */
export class ZkqProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly exited: Promise<RunResult>;
  private readonly waiters = new Set<() => void>();
  private finished = false;
  private stdout = '';
  private stderr = '';

  constructor(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) {
    this.child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? REPO,
      env: childEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const collect = (stream: NodeJS.ReadableStream | null, which: 'stdout' | 'stderr') => {
      if (!stream) return Promise.resolve();
      const rl = createInterface({ input: stream });
      rl.on('line', (line) => {
        this[which] += `${line}\n`;
        this.lines.push(line);
        for (const w of this.waiters) w();
      });
      // A stream the test destroyed on purpose closes without ending.
      return new Promise<void>((resolve) => {
        rl.once('close', resolve);
        stream.once('close', resolve);
      });
    };
    const streams = Promise.all([collect(this.child.stdout, 'stdout'), collect(this.child.stderr, 'stderr')]);
    this.exited = new Promise<RunResult>((resolve) => {
      this.child.once('exit', (code, signal) => {
        void streams.then(() => {
          this.finished = true;
          for (const w of this.waiters) w();
          resolve({ code, signal, stdout: this.stdout, stderr: this.stderr });
        });
      });
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first output line matching `pattern`; rejects on exit or timeout. */
  waitForLine(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = this.lines.find((l) => pattern.test(l));
        if (line !== undefined) return done(() => resolve(line));
        if (this.finished)
          return done(() => reject(new Error(`zkq exited before printing ${pattern}:\n${this.lines.join('\n')}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${this.lines.join('\n')}`))),
        timeoutMs,
      );
      const done = (fn: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        fn();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** The JSON log lines printed so far. */
  logs(): Record<string, any>[] {
    return this.lines.flatMap((l) => {
      if (!l.startsWith('{')) return [];
      try {
        return [JSON.parse(l) as Record<string, any>];
      } catch {
        return [];
      }
    });
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.running) this.child.kill(signal);
  }

  /** Kills (SIGKILL) if still running; for t.after. */
  async dispose(): Promise<void> {
    this.kill('SIGKILL');
    await this.exited;
  }
}

/** Resolves `p`, or rejects after `timeoutMs` naming `what`. */
export function within<T>(p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not happen within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]);
}
