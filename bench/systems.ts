/**
 * The systems the benchmark runs side by side, behind one small shape: zkq on
 * ZooKeeper, BullMQ on Redis (without persistence, and with every write
 * fsynced), BullMQ on the ZooKeeper backend. Every Queue class has BullMQ's
 * API, so the scenarios drive any without knowing which; worker processes
 * (`worker-child.ts`) are started and counted here.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createZooKeeperBackend } from '@zkq/bullmq';
import type { JobsOptions } from '@zkq/core';
import { Queue as ZkqQueue, QueueEvents as ZkqQueueEvents } from '@zkq/producer';
import { Queue as BullQueue, QueueEvents as BullQueueEvents, withBackend } from 'bullmq';
import { clock, cpuMsOf, redisCounters, type ServerCounters, zkCounters } from './lib.js';
import type { ChildConfig, ChildReport, SystemName } from './worker-child.js';

export type { SystemName } from './worker-child.js';

/** What a finished job leaves behind: nothing, or the newest 1,000 completed jobs. */
export type Retention = 'remove' | 'keep-1000';

/** The part of a Queue the scenarios use (zkq's and BullMQ's alike). */
export interface BenchQueue {
  waitUntilReady(): Promise<unknown>;
  add(name: string, data: unknown, opts?: JobsOptions): Promise<unknown>;
  addBulk(jobs: { name: string; data: unknown; opts?: JobsOptions }[]): Promise<unknown>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface BenchEvents {
  on(event: 'completed', fn: () => void): unknown;
  waitUntilReady(): Promise<unknown>;
  close(): Promise<void>;
}

export interface System {
  name: SystemName;
  /** 'zkq' or 'BullMQ'. */
  label: string;
  /** 'ZooKeeper' or 'Redis'. */
  server: string;
  /** The server processes (every member of an ensemble), for their CPU time; empty when unknown. */
  serverPids: number[];
  /** Key prefix of this run's queues (fresh per run, so runs never share a queue). */
  prefix: string;
  connection: Pick<ChildConfig, 'zk' | 'redis'>;
  queue(name: string): BenchQueue;
  events(name: string): BenchEvents;
  counters(): Promise<ServerCounters>;
  retention(r: Retention): JobsOptions;
}

const pids = (pid: number | readonly number[] | undefined): number[] =>
  pid === undefined ? [] : typeof pid === 'number' ? [pid] : [...pid];

export function zkqSystem(
  connectionString: string,
  serverPid: number | readonly number[] | undefined,
  prefix: string,
): System {
  const connection = { connectionString, requestTimeout: 60_000 };
  return {
    name: 'zkq',
    label: 'zkq',
    server: 'ZooKeeper',
    serverPids: pids(serverPid),
    prefix,
    connection: { zk: connectionString },
    queue: (name) => new ZkqQueue(name, { connection, prefix }) as unknown as BenchQueue,
    events: (name) => new ZkqQueueEvents(name, { connection, prefix }) as unknown as BenchEvents,
    // read when asked: the backlog alone runs on servers of its own, and this system has no shared one then
    counters: () => zkCounters(connectionString),
    // zkq keeps the newest 1,000 completed jobs unless told otherwise.
    retention: (r) => (r === 'remove' ? { removeOnComplete: true } : {}),
  };
}

/** How a Redis server keeps its data: not at all, or every write fsynced before its reply. */
export type RedisDurability = 'none' | 'fsync-always';

export function bullmqSystem(
  host: string,
  port: number,
  serverPid: number | undefined,
  prefix: string,
  durability: RedisDurability = 'none',
): System {
  const connection = { host, port };
  const fsync = durability === 'fsync-always';
  return {
    name: fsync ? 'bullmq-fsync' : 'bullmq',
    label: fsync ? 'BullMQ, Redis fsync always' : 'BullMQ',
    server: 'Redis',
    serverPids: pids(serverPid),
    prefix,
    connection: { redis: connection },
    queue: (name) => new BullQueue(name, { connection, prefix }) as unknown as BenchQueue,
    events: (name) => new BullQueueEvents(name, { connection, prefix }) as unknown as BenchEvents,
    counters: () => redisCounters(port),
    // BullMQ keeps every completed job by default: ask for zkq's default explicitly.
    retention: (r) => (r === 'remove' ? { removeOnComplete: true } : { removeOnComplete: { count: 1000 } }),
  };
}

/** BullMQ's own Queue and Worker on the ZooKeeper backend (@zkq/bullmq): same server as zkq. */
export function bullmqZkSystem(connectionString: string, serverPid: number | undefined, prefix: string): System {
  const connection = { connectionString, requestTimeout: 60_000, namespace: prefix };
  const { Queue, QueueEvents } = withBackend(createZooKeeperBackend);
  return {
    name: 'bullmq-zk',
    label: 'BullMQ on ZooKeeper',
    server: 'ZooKeeper',
    serverPids: pids(serverPid),
    prefix,
    connection: { zk: connectionString },
    queue: (name) => new Queue(name, { connection }) as unknown as BenchQueue,
    events: (name) => new QueueEvents(name, { connection }) as unknown as BenchEvents,
    // read when asked: the backlog alone runs on servers of its own, and this system has no shared one then
    counters: () => zkCounters(connectionString),
    retention: (r) => (r === 'remove' ? { removeOnComplete: true } : {}),
  };
}

/** CPU time of the system's server processes together, ms; NaN when unknown. */
export const serverCpuMs = (sys: System) =>
  sys.serverPids.length ? sys.serverPids.reduce((a, pid) => a + cpuMsOf(pid), 0) : Number.NaN;

const ownRoot = fileURLToPath(new URL('..', import.meta.url));

export interface GroupOptions {
  queue: string;
  processes: number;
  workersPerProcess?: number;
  processor?: ChildConfig['processor'];
  behaviour?: ChildConfig['behaviour'];
  concurrency: number;
  threads?: number;
  trace?: boolean;
  /** Write a V8 CPU profile of each process into this directory. */
  profileDir?: string;
  /** Another checkout whose worker-child (and its built packages) to run; this one by default. */
  root?: string;
}

/** Worker processes on one queue: started together, told to go, counted, stopped. */
export class WorkerGroup {
  private readonly children: ChildProcess[] = [];
  private readonly done: number[] = [];
  private readonly reports: Promise<ChildReport>[] = [];
  private readonly waiters = new Set<{ n: number; resolve: () => void; reject: (err: Error) => void }>();
  private failure: Error | undefined;

  private constructor(readonly limitMs: number) {}

  /** Forks the processes; resolves once every worker in them is connected. */
  static async start(sys: System, o: GroupOptions, limitMs: number): Promise<WorkerGroup> {
    const group = new WorkerGroup(limitMs);
    const ready: Promise<void>[] = [];
    for (let p = 0; p < o.processes; p++) ready.push(group.fork(sys, o, p));
    try {
      await withLimit(Promise.all(ready), 120_000, `${sys.label} workers of '${o.queue}' did not start`);
    } catch (err) {
      await group.kill();
      throw err;
    }
    return group;
  }

  private fork(sys: System, o: GroupOptions, index: number): Promise<void> {
    const cfg: ChildConfig = {
      system: sys.name,
      ...sys.connection,
      prefix: sys.prefix,
      queue: o.queue,
      processor: o.processor ?? 'inline',
      behaviour: o.behaviour ?? 'noop',
      concurrency: o.concurrency,
      workers: o.workersPerProcess ?? 1,
      ...(o.threads ? { threads: o.threads } : {}),
      ...(o.trace ? { trace: true } : {}),
    };
    // the packages as users install them (their built JavaScript), not their TypeScript sources
    const execArgv = ['--import', 'tsx'];
    if (o.profileDir) {
      // A directory per process, with node's own file names: one name for all would let the
      // loader thread's profile overwrite the main thread's (thread id 0 in the name).
      execArgv.push('--cpu-prof', `--cpu-prof-dir=${join(o.profileDir, `${sys.name}-${o.queue}-${index}`)}`);
    }
    const root = o.root ?? ownRoot;
    const child = fork(join(root, 'bench', 'worker-child.ts'), [JSON.stringify(cfg)], {
      cwd: root,
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.children.push(child);
    this.done.push(0);
    let ready!: () => void;
    const isReady = new Promise<void>((resolve) => {
      ready = resolve;
    });
    let report!: (r: ChildReport) => void;
    this.reports.push(
      new Promise<ChildReport>((resolve) => {
        report = resolve;
      }),
    );
    child.on('message', (m: { kind: string; done?: number }) => {
      if (m.kind === 'ready') ready();
      else if (m.kind === 'progress') {
        this.done[index] = m.done ?? 0;
        this.wake();
      } else if (m.kind === 'report') report(m as ChildReport);
    });
    child.once('exit', (code, signal) => {
      this.failure ??= new Error(`${sys.label} worker process ${index} of '${o.queue}' exited (${code ?? signal})`);
      this.wake();
    });
    return Promise.race([isReady, new Promise<never>((_, reject) => child.once('exit', () => reject(this.failure)))]);
  }

  /** Jobs finished (completed or failed for good) over every process. */
  get finished(): number {
    return this.done.reduce((a, b) => a + b, 0);
  }

  /** Starts counting CPU time in every process; returns the clock reading. */
  go(): number {
    for (const c of this.children) c.send({ kind: 'go' });
    return clock();
  }

  /** Resolves once `n` jobs have finished in all; rejects when a process dies or the limit passes. */
  waitFinished(n: number): Promise<void> {
    const waiting = new Promise<void>((resolve, reject) => {
      this.waiters.add({ n, resolve, reject });
      this.wake();
    });
    return withLimit(waiting, this.limitMs, () => `workers finished ${this.finished} of ${n} jobs in time`);
  }

  private wake(): void {
    for (const w of this.waiters) {
      if (this.finished >= w.n) w.resolve();
      else if (this.failure) w.reject(this.failure);
      else continue;
      this.waiters.delete(w);
    }
  }

  /** Asks every process for its report, lets it close its workers and exit. */
  async stop(): Promise<ChildReport[]> {
    const exited = this.children.map((c) => new Promise<void>((resolve) => c.once('exit', () => resolve())));
    this.failure = new Error('stopped'); // an exit from now on is expected
    for (const c of this.children) c.send({ kind: 'stop' });
    try {
      return await withLimit(Promise.all(this.reports), 30_000, 'worker processes did not report');
    } finally {
      const timer = setTimeout(() => this.kill(), 15_000);
      await Promise.all(exited);
      clearTimeout(timer);
    }
  }

  async kill(): Promise<void> {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

async function withLimit<T>(p: Promise<T>, ms: number, message: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(typeof message === 'string' ? message : message())), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
