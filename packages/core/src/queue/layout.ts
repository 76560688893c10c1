/**
 * Every znode path of a queue is built here, and only here.
 *
 * ```
 * /<prefix, default zkq>/<queue>/
 *   meta                              {"layout":1,"paused":bool}; data watch = pause flag
 *   jobs/<shard>/<jobId>              the job record (JSON). Its data version is the
 *                                     fencing token of the current attempt. 256 shards
 *                                     (2 hex digits of a hash of the id) keep every
 *                                     listing small; a custom jobId that exists already
 *                                     makes the create fail atomically (de-duplication).
 *   ids                               counter node: each setData hands out a block of ids
 *   ready/<lane>/b-<bucket>/qn-<jobId>-<seq>
 *                                     waiting jobs, as small pointer nodes
 *                                     (PERSISTENT_SEQUENTIAL). Lanes order priorities:
 *                                     `l` (lifo, newest first), then `p-<10 digits>`
 *                                     (priority 0 = none first, then 1, 2, ...). Each lane
 *                                     is cut into buckets of BUCKET_CAPACITY pointers: no
 *                                     getChildren ever returns more than a bucket, however
 *                                     long the backlog. A pointer stays while its job is
 *                                     active, so a crashed worker's job is found again.
 *   claims/<jobId>                    EPHEMERAL, one per active job: owner, lease, token
 *   delayed/w-<window>/<due>-<jobId>  jobs waiting for a time (delay, retry backoff),
 *                                     bucketed by minute so listings stay small
 *   completed/c-<jobId>-<seq>         retained completed jobs, in completion order
 *   failed/f-<jobId>-<seq>            retained failed jobs, in failure order
 *   workers/<workerId>                EPHEMERAL membership of live workers
 *   leader/                           election of the housekeeping leader
 *   barriers/<name>/                  batch-start barriers
 *   events/listeners/<id>             EPHEMERAL: a QueueEvents is listening
 *   events/log/e-<seq>                event batches (JSON arrays), written only while
 *                                     someone listens, inside the transaction that
 *                                     caused them; the oldest are trimmed (EVENTS_KEEP)
 * ```
 */
import { InvalidArgumentError } from '../errors.js';
import { sequenceOf } from '../zk/sequence.js';

export { sequenceOf };

/** Pointers per ready bucket before producers roll to the next one. */
export const BUCKET_CAPACITY = 2000;
/** Shards of the job record store. */
export const JOB_SHARDS = 256;
/** Width of a delayed-job time window, ms. */
export const DELAY_WINDOW_MS = 60_000;
/** Ids handed out per block (one write of the `ids` counter per block). */
export const ID_BLOCK_SIZE = 1000;
/** Lane of jobs added with `lifo: true`. */
export const LIFO_LANE = 'l';
/** Highest priority BullMQ accepts (2^21). */
export const MAX_PRIORITY = 2_097_152;

/** Queue directory names, and the CLI's coordination roots (`zkq lock`, `zkq barrier`) beside the queues. */
const RESERVED_QUEUE_NAMES = new Set([
  'meta',
  'jobs',
  'ready',
  'claims',
  'delayed',
  'completed',
  'failed',
  'ids',
  '_locks',
  '_barriers',
]);
const NAME_RE = /^[A-Za-z0-9._-]{1,100}$/;
const CUSTOM_ID_RE = /^[A-Za-z0-9._:@+=,~-]{1,128}$/;

/** Throws InvalidArgumentError unless `name` is a usable queue name. */
export function validateQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError('queue name must be a non-empty string', 'name');
  }
  if (!NAME_RE.test(name) || name === '.' || name === '..') {
    throw new InvalidArgumentError(
      `invalid queue name '${name}': use 1-100 characters of A-Z a-z 0-9 . _ - (no '/')`,
      'name',
    );
  }
  if (RESERVED_QUEUE_NAMES.has(name)) throw new InvalidArgumentError(`queue name '${name}' is reserved`, 'name');
}

/** Throws InvalidArgumentError unless `id` is a usable custom job id. */
export function validateCustomJobId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !CUSTOM_ID_RE.test(id) || id === '.' || id === '..') {
    throw new InvalidArgumentError(
      `invalid jobId ${JSON.stringify(id)}: use 1-128 characters of A-Z a-z 0-9 . _ : @ + = , ~ - (not . or ..)`,
      'opts.jobId',
    );
  }
  if (/^\d+$/.test(id)) {
    throw new InvalidArgumentError(`custom jobId '${id}' cannot be an integer (those are zkq's own ids)`, 'opts.jobId');
  }
}

/** The 2-hex-digit shard of a job id (FNV-1a). */
export function shardOf(id: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return ((h >>> 0) % JOB_SHARDS).toString(16).padStart(2, '0');
}

/** The lane of a job: `l` for lifo, else `p-<priority>`. */
export function laneOf(priority: number, lifo: boolean): string {
  return lifo ? LIFO_LANE : `p-${String(priority).padStart(10, '0')}`;
}

/** Ten-digit zero-padded number, as ZooKeeper writes sequence numbers. */
export function pad10(n: number): string {
  return String(n).padStart(10, '0');
}

/** The job id inside a `qn-<id>-<seq>`, `c-<id>-<seq>` or `f-<id>-<seq>` pointer name. */
export function idOfPointer(name: string): string {
  return name.slice(name.indexOf('-') + 1, -11);
}

/** The job id inside a delayed pointer `<due>-<id>`. */
export function idOfDelayed(name: string): string {
  return name.slice(14);
}

/** The due time inside a delayed pointer `<due>-<id>`. */
export function dueOfDelayed(name: string): number {
  return Number(name.slice(0, 13));
}

/** Paths of one queue, relative to the session namespace (the prefix). */
export class QueueLayout {
  readonly root: string;
  readonly meta: string;
  readonly jobsDir: string;
  readonly ids: string;
  readonly ready: string;
  readonly claimsDir: string;
  readonly delayedDir: string;
  readonly completedDir: string;
  readonly failedDir: string;
  readonly workersDir: string;
  readonly leaderDir: string;
  readonly barriersDir: string;
  readonly eventsDir: string;
  readonly eventListeners: string;
  readonly eventLog: string;

  constructor(readonly queue: string) {
    validateQueueName(queue);
    this.root = `/${queue}`;
    this.meta = `${this.root}/meta`;
    this.jobsDir = `${this.root}/jobs`;
    this.ids = `${this.root}/ids`;
    this.ready = `${this.root}/ready`;
    this.claimsDir = `${this.root}/claims`;
    this.delayedDir = `${this.root}/delayed`;
    this.completedDir = `${this.root}/completed`;
    this.failedDir = `${this.root}/failed`;
    this.workersDir = `${this.root}/workers`;
    this.leaderDir = `${this.root}/leader`;
    this.barriersDir = `${this.root}/barriers`;
    this.eventsDir = `${this.root}/events`;
    this.eventListeners = `${this.eventsDir}/listeners`;
    this.eventLog = `${this.eventsDir}/log`;
  }

  /** Directories created once per queue (shards included). */
  directories(): string[] {
    const shards = Array.from({ length: JOB_SHARDS }, (_, i) => this.shard(i.toString(16).padStart(2, '0')));
    return [
      this.root,
      this.jobsDir,
      ...shards,
      this.ready,
      this.claimsDir,
      this.delayedDir,
      this.completedDir,
      this.failedDir,
      this.workersDir,
      this.leaderDir,
      this.barriersDir,
      this.eventsDir,
      this.eventListeners,
      this.eventLog,
    ];
  }

  shard(shard: string): string {
    return `${this.jobsDir}/${shard}`;
  }

  job(id: string): string {
    return `${this.jobsDir}/${shardOf(id)}/${id}`;
  }

  lane(lane: string): string {
    return `${this.ready}/${lane}`;
  }

  bucket(lane: string, bucket: number): string {
    return `${this.ready}/${lane}/b-${pad10(bucket)}`;
  }

  /** Prefix of a ready pointer; ZooKeeper appends the sequence number. */
  readyPointerPrefix(lane: string, bucket: number, id: string): string {
    return `${this.bucket(lane, bucket)}/qn-${id}-`;
  }

  claim(id: string): string {
    return `${this.claimsDir}/${id}`;
  }

  delayWindow(due: number): string {
    return `${this.delayedDir}/w-${pad10(Math.floor(due / DELAY_WINDOW_MS))}`;
  }

  delayed(due: number, id: string): string {
    return `${this.delayWindow(due)}/${String(Math.max(0, Math.floor(due))).padStart(13, '0')}-${id}`;
  }

  completedPointerPrefix(id: string): string {
    return `${this.completedDir}/c-${id}-`;
  }

  failedPointerPrefix(id: string): string {
    return `${this.failedDir}/f-${id}-`;
  }

  eventPrefix(): string {
    return `${this.eventLog}/e-`;
  }

  worker(id: string): string {
    return `${this.workersDir}/${id}`;
  }
}
