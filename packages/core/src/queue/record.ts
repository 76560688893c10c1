/**
 * The job record stored at `jobs/<shard>/<id>`, and its codec.
 *
 * Records are JSON. Data is checked before it is written: what JSON cannot
 * carry faithfully (functions, BigInt, symbols, cycles, NaN/Infinity) is
 * refused with InvalidJobDataError, and a record over MAX_RECORD_BYTES with
 * PayloadTooLargeError, so nothing oversized ever reaches ZooKeeper.
 */
import { InvalidJobDataError, MalformedJobError, PayloadTooLargeError } from './errors.js';
import type { JobJson, JobProgress, JobsOptions } from './types.js';

/**
 * Largest serialized job record, bytes. ZooKeeper refuses nodes of ~1 MB;
 * half of that leaves room for the return value, a failure's reason and
 * stacks (cut to their sizes: sizes.ts) and the other nodes of the same
 * transaction.
 */
export const MAX_RECORD_BYTES = 512 * 1024;

/** Where the job is, as the record says (active is told by the claim node, not here). */
export type RecordState = 'waiting' | 'active' | 'delayed' | 'completed' | 'failed' | 'waiting-children';

/**
 * A child's link to its parent job (flows): the parent's queue (in the same
 * namespace) and id, and what the child's final failure does to it, BullMQ's
 * `failParentOnFailure` (fpof), `continueParentOnFailure` (cpof),
 * `ignoreDependencyOnFailure` (idof), `removeDependencyOnFailure` (rdof).
 */
export interface ParentLink {
  queue: string;
  id: string;
  fpof?: boolean;
  cpof?: boolean;
  idof?: boolean;
  rdof?: boolean;
}

export interface JobRecord extends JobJson {
  /** Format version of the record. */
  v: 1;
  state: RecordState;
  /** Lane (`l` or `p-<priority>`) of the ready pointer while waiting or active. */
  lane?: string;
  /** Enqueue nonce: tells whether a transaction whose reply was lost committed. */
  n?: string;
  /** Due time while delayed. */
  due?: number;
  /**
   * Log lines kept in the record by versions before logs lived apart
   * (`logs/<shard>/<id>`, protocol/logs.ts): still read, never written.
   */
  logs?: string[];
  /** The parent this job is a dependency of (flows). */
  parentLink?: ParentLink;
  /** While waiting for its children: the path of its waiting-children pointer. */
  parked?: string;
  /** Set when the job's dependency node was made with it (a flow's parent). */
  hasDeps?: boolean;
  /** A reason to fail the job at its next claim instead of running it (a child failed with fpof). */
  deferredFailure?: string;
  /**
   * The claims of its ready pointer (at path `pointer`) this record has counted in `attemptsStarted` and `stalledCounter`,
   * up to the pointer's data version `token`. A claim writes no record: it
   * takes its token from the pointer's version, so a claim at a later version
   * than `token + 1` follows attempts that ended without a finish or a
   * revocation (their workers died), each one stall (protocol/claim.ts).
   */
  counted?: { pointer: string; token: number };
}

/** Throws InvalidJobDataError when `value` does not survive a JSON round trip. */
export function assertJsonFaithful(value: unknown, path = 'data'): void {
  const ancestors: object[] = [];
  const visit = (v: unknown, at: string): void => {
    switch (typeof v) {
      case 'function':
        throw new InvalidJobDataError('a function', at);
      case 'bigint':
        throw new InvalidJobDataError('a BigInt', at);
      case 'symbol':
        throw new InvalidJobDataError('a symbol', at);
      case 'number':
        if (!Number.isFinite(v)) throw new InvalidJobDataError(`the number ${v}`, at);
        return;
      case 'object': {
        if (v === null) return;
        if (ancestors.includes(v)) throw new InvalidJobDataError('a circular reference', at);
        if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return; // Date & co: their JSON form is stored
        ancestors.push(v);
        if (Array.isArray(v)) {
          for (let i = 0; i < v.length; i++) visit(v[i], `${at}[${i}]`);
        } else for (const [k, item] of Object.entries(v)) if (item !== undefined) visit(item, `${at}.${k}`);
        ancestors.pop();
        return;
      }
      default:
        return;
    }
  };
  visit(value, path);
}

/** Serializes a record, refusing one over `limit` bytes. */
export function encodeRecord(record: JobRecord, limit = MAX_RECORD_BYTES): Buffer {
  const buf = Buffer.from(JSON.stringify(record));
  if (buf.length > limit) throw new PayloadTooLargeError(buf.length, limit);
  return buf;
}

/** Parses a stored record; throws MalformedJobError for anything that is not one. */
export function decodeRecord(buf: Buffer, path: string): JobRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(buf.toString('utf8'));
  } catch {
    throw new MalformedJobError(path, 'not JSON');
  }
  const r = parsed as Partial<JobRecord> | null;
  if (!r || typeof r !== 'object' || r.v !== 1 || typeof r.id !== 'string' || typeof r.name !== 'string') {
    throw new MalformedJobError(path, 'not a zkq job record');
  }
  return r as JobRecord;
}

/** A fresh record for a job being added. */
export function newRecord(
  id: string,
  name: string,
  data: unknown,
  opts: JobsOptions,
  state: RecordState,
  now: number,
): JobRecord {
  return {
    v: 1,
    id,
    name,
    data,
    opts,
    progress: 0 as JobProgress,
    attemptsMade: 0,
    attemptsStarted: 0,
    stalledCounter: 0,
    timestamp: opts.timestamp ?? now,
    delay: opts.delay ?? 0,
    priority: opts.priority ?? 0,
    stacktrace: [],
    state,
  };
}
