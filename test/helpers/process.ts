/** Child processes for tests: spawn a TypeScript fixture and wait for lines it prints. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Fixture {
  child: ChildProcess;
  /** Lines printed so far. */
  lines: string[];
  /** Resolves with the first line (past or future) matching `re`. */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or signal) once the process exits. */
  exited: Promise<number | string>;
}

/** Runs `file` with tsx in the source condition, as the test runner itself does. */
export function spawnFixture(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Fixture {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=zkq-source', file, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    lines.push(line);
    for (const w of waiters.filter((w) => w.re.test(line))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(line);
    }
  });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, sig) => resolve(code ?? sig ?? -1)),
  );
  return {
    child,
    lines,
    exited,
    waitForLine(re, timeoutMs = 30_000) {
      const seen = lines.find((l) => re.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no line matching ${re} within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`)),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      });
    },
  };
}
