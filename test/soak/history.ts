/**
 * The soak's history: what the producer enqueued, what every worker process
 * did, which faults were injected, and what ZooKeeper holds at the end.
 *
 * Processes append one JSON object per line (NDJSON) with a synchronous
 * write, so an event written before a SIGKILL survives it. Every process
 * runs on the same machine, so `ts` (Date.now()) values are comparable.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** An acknowledged enqueue: `add`/`addBulk` resolved with this job. */
export interface EnqueueEvent {
  k: 'enqueue';
  q: string;
  id: string;
  /** The producer's sequence number, also the job's name (`j<seq>`). */
  seq: number;
  priority: number;
  delay: number;
  attempts: number;
  custom: boolean;
  /** Short hash of the job's data as sent. */
  hash: string;
  bytes: number;
  ts: number;
}

/** An `add`/`addBulk` that threw: these jobs may or may not exist. */
export interface UnackedEnqueueEvent {
  k: 'enqueue-unacked';
  q: string;
  seqs: number[];
  /** Data hash of each job, by position in `seqs`. */
  hashes: string[];
  error: string;
  ts: number;
}

/** A re-add of an existing custom id (must not make a second job). */
export interface ReaddEvent {
  k: 'readd';
  q: string;
  id: string;
  ok: boolean;
  ts: number;
}

/** What a child's final failure does to its parent: BullMQ's default (the parent waits), failParentOnFailure, ignoreDependencyOnFailure. */
export type ChildPolicy = 'wait' | 'fail-parent' | 'ignore';

export interface FlowChild {
  q: string;
  id: string;
  seq: number;
  policy: ChildPolicy;
  /** Its processor throws in every attempt. */
  doomed: boolean;
}

/**
 * A flow added through BullMQ's FlowProducer: acknowledged, or thrown (then
 * it exists whole or not at all). Its jobs have custom ids, so an
 * unacknowledged flow that committed is found too.
 */
export interface FlowEvent {
  k: 'flow';
  acked: boolean;
  /** The parent. */
  q: string;
  id: string;
  seq: number;
  children: FlowChild[];
  error?: string;
  ts: number;
}

/** A flow job's data: the processor knows a parent (reads its dependencies) and a doomed child (always throws). */
export interface FlowData {
  flow: number;
  seq: number;
  parent?: true;
  doomed?: true;
}

export function isFlowData(data: unknown): data is FlowData {
  return typeof data === 'object' && data !== null && typeof (data as FlowData).flow === 'number';
}

/** What a parent's processor read of its dependencies, children named `<queue>:<id>`. */
export interface SeenDeps {
  processed: Record<string, unknown>;
  ignored: string[];
  failed: string[];
  unprocessed: string[];
}

/** The processor's return value in the soak: who ran which attempt on what data. */
export interface SoakResult {
  w: string;
  t: string;
  n: number;
  h: string;
}

interface WorkerBase {
  w: string;
  ts: number;
}

export type WorkerEvent = WorkerBase &
  (
    | { k: 'ready'; pid: number }
    | { k: 'start'; q: string; j: string; t: string; n: number }
    | { k: 'end'; q: string; j: string; t: string; ok: true; v: SoakResult; deps?: SeenDeps }
    | { k: 'end'; q: string; j: string; t: string; ok: false; err: string; deps?: SeenDeps }
    | { k: 'completed'; q: string; j: string; t: string }
    | { k: 'failed'; q: string; j: string; t: string; reason: string; attemptsMade: number }
    | { k: 'lost'; q: string; j: string; t: string; err: string }
    | { k: 'stalled'; q: string; j: string }
    /** ZooKeeper's ctime of the claim node an attempt on the rate-limited queue runs under. */
    | { k: 'claim'; q: string; j: string; t: string; ctime: number }
    | { k: 'error'; msg: string; code?: string }
    | { k: 'session'; state: string; q?: string; sid?: string }
    | { k: 'leader'; leader: boolean; q?: string }
    | {
        k: 'election';
        q: string;
        session: string;
        step: string;
        node?: string;
        watch?: string;
        event?: string;
        error?: string;
      }
  );

export type FaultKind =
  | 'kill'
  | 'stop'
  | 'freeze'
  | 'cut'
  | 'lose-replies'
  | 'expire'
  | 'restart'
  | 'kill-restart'
  | 'restart-kill';

export interface FaultEvent {
  k: 'fault';
  kind: FaultKind;
  target: string;
  ts: number;
  ms: number;
  note?: string;
}

/** A job as ZooKeeper holds it after the soak, read through the public API. */
export interface FinalJob {
  q: string;
  id: string;
  /** `getJobState`: 'unknown' when the job does not exist. */
  state: string;
  name?: string;
  returnvalue?: unknown;
  failedReason?: string;
  finishedOn?: number;
  attemptsMade?: number;
  attemptsStarted?: number;
  stalledCounter?: number;
  /** Hash of the stored data. */
  hash?: string;
  /** The job's log lines (`getLogs`), read for jobs of the extras queue that log. */
  logs?: string[];
  /** The `getJobs` types that list this job (a finished job: exactly its state). */
  listed?: string[];
}

export interface SoakHistory {
  enqueues: EnqueueEvent[];
  unacked: UnackedEnqueueEvent[];
  readds: ReaddEvent[];
  /** Every flow the producer added (its jobs are in `enqueues` or `unacked` too). */
  flows: FlowEvent[];
  /** Every worker event; within one worker in the order it was written. */
  workers: WorkerEvent[];
  faults: FaultEvent[];
  /** The final state of every acknowledged job and of every other job found in the queues. */
  finals: FinalJob[];
  /** Queues fed by one worker at concurrency 1, without faults: start order must equal enqueue order per lane. */
  fifoQueues: string[];
  /** When the final states were read (ms since epoch). */
  endedAt?: number;
  /** When the chaos phase's load stopped (ms since epoch). */
  chaosEndedAt?: number;
  /** The extras queue (extras.ts): sizes, logs, deduplication, schedulers, a rate limit. */
  extras?: ExtrasHistory;
}

/** What the processor of an extras job does, by `data.x`. */
export type ExtraKind = 'plain' | 'big-error' | 'logs' | 'too-large' | 'dedup' | 'tick';

/** An extras job's data. */
export interface ExtraData {
  x: ExtraKind;
  seq?: number;
  /** `logs`: lines to log, each LOG_LINE_BYTES long. */
  lines?: number;
  /** `logs`: complete (true) or throw after logging. */
  ok?: boolean;
  /** `tick`: the scheduler. */
  s?: string;
}

/** An add with `deduplication` on the extras queue: created its job, was deduplicated (returned another), or threw. */
export interface DedupAddEvent {
  k: 'dedup-add';
  q: string;
  dedup: string;
  ttl?: number;
  seq: number;
  /** The id the add resolved with (absent when it threw). */
  id?: string;
  /** The add created the job (its name is `j<seq>`); false: it resolved with the kept job. */
  own?: boolean;
  /** When the add was called and when it resolved (or threw). */
  sent: number;
  ts: number;
}

/** A job scheduler of the extras queue, upserted at the chaos phase's start and removed at its end. */
export interface SchedulerEvent {
  k: 'scheduler';
  id: string;
  every: number;
  upserted: number;
  removed?: number;
}

export interface ExtrasHistory {
  q: string;
  /** The queue's rate limit: at most `max` claims per `duration` ms. */
  limit: { max: number; duration: number };
  dedupAdds: DedupAddEvent[];
  schedulers: SchedulerEvent[];
  /** Per deduplication id at the end: its raw key node exists, and the job it keeps when live. */
  dedupKeys: { dedup: string; ttl?: number; exists: boolean; live: string | null }[];
  /** What each acknowledged job of the queue does (by id), and its keepLogs when it logs. */
  jobs: Record<string, { x: ExtraKind; keepLogs?: number; lines?: number }>;
}

/** An append-only NDJSON log; each line is written with one synchronous write. */
export class NdjsonLog {
  private readonly fd: number;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  append(event: object): void {
    writeSync(this.fd, `${JSON.stringify(event)}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Parses an NDJSON file; a torn last line (a process killed mid-write) is skipped. */
export function readNdjson<T>(path: string): T[] {
  const out: T[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // only the last line of a killed writer can be partial
    }
  }
  return out;
}

/** Every worker event of the `worker-*.ndjson` files in `dir`. */
export function readWorkerLogs(dir: string): WorkerEvent[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('worker-') && f.endsWith('.ndjson'))
    .sort()
    .flatMap((f) => readNdjson<WorkerEvent>(join(dir, f)));
}

/** Short hash of a job's data, as JSON: the producer, the processor and the final read must agree. */
export function dataHash(data: unknown): string {
  return createHash('sha1')
    .update(JSON.stringify(data ?? null))
    .digest('hex')
    .slice(0, 12);
}
