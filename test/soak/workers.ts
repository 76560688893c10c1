/**
 * The soak's worker processes: spawn one (worker-child.ts), wait until it
 * runs, stop, continue and kill it, ask it for its sessions' credentials.
 * Every child ever spawned is SIGKILLed when this process exits, and each
 * child exits by itself when its IPC channel to this process closes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SessionCredentials } from '@zkq/testing';
import type { WorkerChildConfig } from './worker-child.js';

const CHILD = fileURLToPath(new URL('./worker-child.ts', import.meta.url));
const READY_TIMEOUT_MS = 30_000;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

export class WorkerProcess {
  private readonly exited: Promise<void>;
  private readonly started: Promise<void>;
  stopped = false;
  /** Whether it last reported itself the queue's housekeeping leader. */
  leader = false;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (m: { type?: string; leader?: boolean }) => {
      if (m?.type === 'leader') this.leader = m.leader === true;
    });
    child.once('exit', () => {
      this.leader = false;
    });
    this.started = new Promise((resolve, reject) => {
      child.on('message', (m: { type?: string }) => m?.type === 'ready' && resolve());
      child.once('exit', (code, signal) => reject(new Error(`worker ${name} exited (${code ?? signal})`)));
    });
    this.started.catch(() => undefined);
  }

  /** Spawns a worker; its stdout and stderr go to `<dir>/<name>.out`. */
  static spawn(dir: string, config: Omit<WorkerChildConfig, 'log'>): WorkerProcess {
    const out = openSync(join(dir, `${config.name}.out`), 'a');
    const full: WorkerChildConfig = { ...config, log: join(dir, `worker-${config.name}.ndjson`) };
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=zkq-source', CHILD, JSON.stringify(full)], {
      stdio: ['ignore', out, out, 'ipc'],
    });
    closeSync(out);
    live.add(child);
    child.once('exit', () => live.delete(child));
    return new WorkerProcess(config.name, child);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves once the worker is connected and claiming. */
  async ready(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`worker ${this.name} not ready within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.started, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The current credentials of the worker's sessions (one per queue it works on). */
  async credentials(timeoutMs = 5000): Promise<SessionCredentials[]> {
    const m = (await this.request('credentials', { type: 'credentials' }, timeoutMs)) as {
      sessions: { sessionId: string; password: string }[];
    };
    return m.sessions.map((s) => ({
      sessionId: Buffer.from(s.sessionId, 'hex'),
      password: Buffer.from(s.password, 'hex'),
    }));
  }

  private request(type: string, send: object, timeoutMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (!this.running) return reject(new Error(`worker ${this.name} is not running`));
      const onMessage = (m: { type?: string }) => {
        if (m?.type !== type) return;
        done();
        resolve(m);
      };
      const onExit = () => {
        done();
        reject(new Error(`worker ${this.name} exited`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`worker ${this.name}: no '${type}' within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
      };
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send(send);
    });
  }

  stop(): void {
    this.stopped = true;
    this.child.kill('SIGSTOP');
  }

  resume(): void {
    this.stopped = false;
    this.child.kill('SIGCONT');
  }

  /** SIGKILL (after SIGCONT, so a stopped worker dies too); resolves once it has exited. */
  async kill(): Promise<void> {
    if (this.running) {
      this.child.kill('SIGCONT');
      this.child.kill('SIGKILL');
    }
    await this.exited;
  }
}
