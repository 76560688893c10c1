/**
 * The jobs of the layout 3 probe (layout3-probe.ts), on the raw session:
 * today's nodes (record `jobs/<shard>/<id>` + ready pointer) built with the
 * protocol's own op builders, and layout 3's (one sequential node per job
 * carrying its immutable body, and for the claim that writes one, a small
 * state node `states/<shard>/<id>`), with the adds that write them and the
 * clean-up after each measurement.
 */
import { randomBytes } from 'node:crypto';
import type { Op, OpResult, Session } from '@zkq/core';
import {
  BUCKET_CAPACITY,
  encodeRecord,
  enqueueOps,
  JOB_SHARDS,
  MAX_OPS,
  newRecord,
  PLAIN_LANE,
  QueueLayout,
  shardOf,
} from '@zkq/core/internal';
import { payload, pipelined } from './lib.js';

/** The worker id written in claims and records (the shape of a real one). */
export const WORKER_ID = 'bench-host:12345:5f3a9c1e';
/** Ops per multi of the clean-up deletes. */
const DELETE_BATCH = 1000;

export type Layout = 'today' | 'l3';

/** One job of a measurement: its id, its pointer or body node, and (layout 3, setData claim) its state node. */
export interface ProbeJob {
  id: string;
  /** Today: the ready pointer; layout 3: the body node (sequential, in its ready bucket). */
  node: string;
  state?: string;
}

/** A queue of the probe: today's layout paths, plus layout 3's state nodes. */
export class ProbeQueue {
  readonly layout: QueueLayout;
  readonly statesDir: string;
  /** Receipts of settled multis not deleted yet (deleted by the next finish, or the clean-up). */
  readonly receipts: string[] = [];
  /** Ops of the claim multis sent (receipts and pause checks included). */
  claimOpsSent = 0;

  constructor(
    readonly session: Session,
    name: string,
    readonly kind: Layout,
  ) {
    this.layout = new QueueLayout(name);
    this.statesDir = `${this.layout.root}/states`;
  }

  bucket(i: number): string {
    return this.layout.bucket(PLAIN_LANE, Math.floor(i / BUCKET_CAPACITY));
  }

  state(id: string): string {
    return `${this.statesDir}/${shardOf(id)}/${id}`;
  }

  /** A new receipt path, as the executor adds one to each multi whose outcome it must know. */
  receipt(): string {
    return this.layout.receipt(`r-${randomBytes(8).toString('hex')}`);
  }

  /** Creates the queue's directories for `count` jobs (not timed). */
  async create(count: number, withStates: boolean): Promise<void> {
    const l = this.layout;
    const shards = (dir: string) =>
      Array.from({ length: JOB_SHARDS }, (_, i) => `${dir}/${i.toString(16).padStart(2, '0')}`);
    const dirs = [l.root, l.meta, l.head, l.ready, l.lane(PLAIN_LANE), l.claimsDir, l.receiptsDir];
    for (let b = 0; b * BUCKET_CAPACITY < count; b++) dirs.push(l.bucket(PLAIN_LANE, b));
    if (this.kind === 'today') dirs.push(l.jobsDir, ...shards(l.jobsDir));
    if (withStates) dirs.push(this.statesDir, ...shards(this.statesDir));
    await this.session.multi(dirs.map((path) => ({ op: 'create', path })));
  }

  /** Deletes the queue: `leaves` (nodes left by the measurement) in multis, then the rest. */
  async remove(leaves: readonly string[]): Promise<void> {
    const all = [...leaves, ...this.receipts.splice(0)];
    await pipelined(Math.ceil(all.length / DELETE_BATCH), 8, (t) =>
      this.session.multi(all.slice(t * DELETE_BATCH, (t + 1) * DELETE_BATCH).map((path) => ({ op: 'delete', path }))),
    );
    await this.session.deleteRecursive(this.layout.root);
  }
}

/** Today's record of job `i` as zkq's Queue writes it (~100 bytes of data, removeOnComplete). */
export function todayRecord(i: number, now: number): Buffer {
  const record = newRecord(String(i + 1), 'bench', payload({ i }), { removeOnComplete: true }, 'waiting', now);
  return encodeRecord({ ...record, lane: PLAIN_LANE });
}

/** Layout 3's immutable body of job `i`: today's record without the fields an attempt changes. */
export function bodyOf(i: number, now: number): Buffer {
  const id = String(i + 1);
  const opts = { removeOnComplete: true };
  return Buffer.from(
    JSON.stringify({ v: 3, id, name: 'bench', data: payload({ i }), opts, timestamp: now, delay: 0, priority: 0 }),
  );
}

/** A state node as added: waiting, no attempt yet. */
export const WAITING_STATE = Buffer.from('{"s":"waiting"}');

export interface AddResult {
  jobs: ProbeJob[];
  /** Nodes written per job (records, pointers, bodies, states). */
  nodes: number;
}

/**
 * Adds jobs `from` .. `from + count - 1` as one `addBulk` call does: today
 * record + pointer per job, MAX_OPS ops per multi (500 jobs), the multis
 * pipelined; layout 3 one body node per job (1,000 jobs per multi). Each
 * multi also rewrites the head and creates a receipt, as the executor's do.
 * `states`: also layout 3's state nodes (set-up of the setData claim only).
 */
export async function addBulk(q: ProbeQueue, from: number, count: number, states = false): Promise<ProbeJob[]> {
  const now = Date.now();
  const perJob = q.kind === 'today' ? 2 : states ? 2 : 1;
  const perMulti = Math.floor(MAX_OPS / perJob);
  const sends: Promise<ProbeJob[]>[] = [];
  for (let start = from; start < from + count; start += perMulti) {
    const n = Math.min(perMulti, from + count - start);
    const ops: Op[] = [];
    for (let i = start; i < start + n; i++) ops.push(...jobOps(q, i, now, states));
    const receipt = q.receipt();
    ops.push({ op: 'setData', path: q.layout.head, data: Buffer.alloc(0) }, { op: 'create', path: receipt });
    sends.push(
      q.session.multi(ops).then((results) => {
        q.receipts.push(receipt);
        return jobsOf(q, start, n, results, perJob);
      }),
    );
  }
  return (await Promise.all(sends)).flat();
}

function jobOps(q: ProbeQueue, i: number, now: number, states: boolean): Op[] {
  const id = String(i + 1);
  const bucket = q.bucket(i);
  if (q.kind === 'today') return enqueueOps(q.layout, id, todayRecord(i, now), { kind: 'ready', bucket });
  const body: Op = {
    op: 'create',
    path: q.layout.readyPointerPrefix(bucket, id),
    data: bodyOf(i, now),
    mode: 'persistent_sequential',
  };
  return states ? [body, { op: 'create', path: q.state(id), data: WAITING_STATE }] : [body];
}

function jobsOf(q: ProbeQueue, start: number, n: number, results: OpResult[], perJob: number): ProbeJob[] {
  return Array.from({ length: n }, (_, k) => {
    const id = String(start + k + 1);
    // today: record then pointer; layout 3: body (then state)
    const created = results[k * perJob + (q.kind === 'today' ? 1 : 0)] as { path: string };
    const job: ProbeJob = { id, node: created.path };
    if (q.kind === 'l3' && perJob === 2) job.state = q.state(id);
    return job;
  });
}

/** Every node a job leaves when nothing finished it (claims included once claimed). */
export function leavesOf(q: ProbeQueue, jobs: readonly ProbeJob[], claimed: boolean): string[] {
  return jobs.flatMap((j) => [
    ...(claimed ? [q.layout.claim(j.id)] : []),
    j.node,
    ...(q.kind === 'today' ? [q.layout.job(j.id)] : []),
    ...(j.state ? [j.state] : []),
  ]);
}
