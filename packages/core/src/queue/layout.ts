/**
 * Every znode path of a queue is built here, and only here.
 *
 * ```
 * /<prefix, default zkq>/<queue>/     the queue's name, percent-encoded outside A-Z a-z 0-9 . _ -
 *                                     (encodeQueueName), here and in dependency entries
 *   meta                              {"layout":3,"paused":bool}; data watch = pause flag;
 *                                     every claim transaction checks the version its flag
 *                                     was read unset at, so a pause fails claims on their way
 *   jobs/<shard>/<jobId>              the job record (JSON), not written by a claim: an
 *                                     attempt writes it once, at its finish. 256 shards
 *                                     (2 hex digits of a hash of the id) keep every
 *                                     listing small; a custom jobId that exists already
 *                                     makes the create fail atomically (de-duplication).
 *   ids                               counter node: the next free id; each compare-and-set
 *                                     hands out a block of ids sized to demand
 *   head                              the wake-up node: rewritten inside every transaction
 *                                     that makes a job claimable (enqueue, promotion, retry,
 *                                     revocation); the first idle worker watches its data
 *   ready/<lane>/b-<bucket>/qn-<jobId>-<seq>
 *                                     waiting jobs, as small pointer nodes
 *                                     (PERSISTENT_SEQUENTIAL). Lanes order priorities:
 *                                     `l` (lifo, newest first), then `p-<10 digits>`
 *                                     (priority 0 = none first, then 1, 2, ...). A pointer
 *                                     stays while its job is active, so a crashed worker's
 *                                     job is found again. Empty lanes are removed. Its data
 *                                     (empty) is written blind by each claim: its version
 *                                     is the fencing token of the current attempt.
 *   claims/<jobId>                    EPHEMERAL, one per active job: owner, its ready pointer,
 *                                     start, lease duration, progress (renewals add the
 *                                     token). Its data version counts renewals.
 *   delayed/d-<day>/h-<hour>/b-<bucket>/<due>-<jobId>
 *                                     jobs waiting for a time (delay, retry backoff)
 *   completed/b-<bucket>/c-<jobId>-<seq>   retained completed jobs, in completion order
 *   failed/b-<bucket>/f-<jobId>-<seq>      retained failed jobs, in failure order. The data
 *                                     version of `completed` / `failed` counts the pointers
 *                                     added there without a trim beside them: a finish below
 *                                     its count bound writes it at the version its count was
 *                                     read at (protocol/trims.ts)
 *   receipts/r-<random>               one per transaction whose outcome a client must know:
 *                                     created inside it, read back after a lost reply,
 *                                     deleted once the outcome is known
 *   idle/w-<session>-<marker>-<seq>   EPHEMERAL_SEQUENTIAL: the line of idle workers; only the
 *                                     first watches the head, each other one its predecessor
 *   workers/<workerId>                EPHEMERAL membership of live workers
 *   leader/                           election of the housekeeping leader
 *   barriers/<name>/                  batch-start barriers
 *   events/listeners/<id>             EPHEMERAL: a QueueEvents is listening
 *   events/log/e-<seq>                event batches (JSON arrays), written only while
 *                                     someone listens, inside the transaction that
 *                                     caused them; trimmed to the last EVENTS_KEEP
 *   events/drained                    the claims directory's pzxid when `drained` was last logged,
 *                                     created on first use; the event is logged in a transaction
 *                                     that writes it at the version read (see drained.ts), so two
 *                                     workers that saw the same dry queue log it once
 *   schedulers/s-<id>                 job schedulers (JSON: repeat options, template, the current
 *                                     iteration's time `next` and count `ic`), created on first
 *                                     use; its data version fences every iteration it adds
 *   metrics/<completed|failed>        per-minute counts of finished jobs (workers with the
 *                                     `metrics` option), created on first use: the series
 *                                     head {"count","prevTS","prevCount","first","max","oldest"};
 *                                     its data version fences every write of the series
 *   metrics/<kind>/h-<hour>           the counts of one hour (JSON array of 60), only for
 *                                     hours with jobs, none older than the head's `max` minutes
 *   settings                          queue settings BullMQ keeps in its meta hash, `paused`
 *                                     aside (global concurrency, rate limit max/duration,
 *                                     version...): a JSON object of strings, written by
 *                                     compare-and-set, created on first write
 *   limiter                           the rate-limit window, created on first use and never
 *                                     deleted (so its version never repeats): {"ms","id"}
 *                                     (+"manual"). It opened at the node's mtime (a write made
 *                                     only to open a window) and ends `ms` later, both times on
 *                                     ZooKeeper's clock (see clock). "ms": 0 = ended
 *   limiter/count                     jobs started in the current window {"count"}, written by
 *                                     the claim transaction at its version, beside a check of
 *                                     the window's
 *   slots/s-<k>                       EPHEMERAL, while a global concurrency N is set: one per
 *                                     job running under it, k < N; created in the claim
 *                                     transaction (the create is the test-and-set), deleted
 *                                     with the claim node it is named in, created on first use
 *   clock                             empty; a write to it tells ZooKeeper's current time (the
 *                                     write's mtime), so a window is never judged on a client's clock
 *   dedup/<shard>/d-<id>              deduplication keys (`opts.deduplication`), id URI-encoded,
 *                                     sharded like jobs, created on first use: {"job","ttl"?,"next"?}.
 *                                     Created in the transaction that adds the job it names (the
 *                                     create is the test-and-set); `ttl` counts from the node's
 *                                     mtime on ZooKeeper's clock. Deleted (at the version read) by
 *                                     the finish of its job (no ttl), the removal of its job, or the
 *                                     leader's sweep once its ttl ran out or its job is gone; the
 *                                     sweep removes empty shards. `dedup` stays once made: its
 *                                     version, bumped by each delete the sweep makes, fences the
 *                                     writes of adds to keys they read (see dedup.ts)
 *   waiting-children/b-<bucket>/w-<jobId>
 *                                     parents waiting for their children (flows), created on
 *                                     first use; the record names its pointer (`parked`)
 *   deps/<shard>/<jobId>              a parent's dependencies, sharded like jobs, created with
 *                                     its first child: {"pending": n, "failed"?: child key,
 *                                     "bucketed"?: true}. Every change of a child's standing is
 *                                     written at this node's version, so the last child to
 *                                     finish is the one that releases the parent, in its own
 *                                     finish transaction
 *   deps/<shard>/<jobId>/b-<xx>/<k>-<queue>:<childId>
 *                                     one per child: k = u unprocessed, p processed (data: its
 *                                     return value), i ignored, f failed (data: the reason).
 *                                     `xx`: 2 hex digits of a hash of `<queue>:<childId>`
 *                                     (DEP_BUCKETS), so a child finds its entry without a
 *                                     listing and no listing holds more than a 256th of the
 *                                     children. Buckets are created with the first entry put in
 *                                     them and go with the node. A node written before buckets
 *                                     (no `bucketed`) may hold entries right under it too; they
 *                                     are read and settled where they are
 *   deps-adds/a-<random>              a flow too large for one transaction being added, from
 *                                     its first job's queue (see protocol/flow-add-split.ts):
 *                                     {"held": [parents it parks]}, created on first use by its
 *                                     first transaction, rewritten by each later one, deleted by
 *                                     the last; one the leader sees unchanged for
 *                                     FLOW_ADD_STALE_MS on its own clock is a cut-off add, whose
 *                                     held parents it fails
 *   logs/<shard>/<jobId>              a job's log lines (`job.log`), sharded like jobs, created on
 *                                     first use: a JSON array of the last `keepLogs` lines, bounded
 *                                     in bytes (sizes.ts), never in the record. Lines of a node
 *                                     created before the job's record (czxid) belong to an earlier
 *                                     job of that id and are not read. The leader deletes the nodes
 *                                     of jobs that are gone, a few shards a pass (protocol/logs.ts);
 *                                     obliterate with the queue
 *   flow-children                     empty; created (once) before the queue first gets a child of a
 *                                     flow: retention then reads the failed jobs it trims, since a
 *                                     failed child may still be pending for its parent
 *   cancels/w-<worker>/<jobId>-<token>
 *                                     cancel requests (see protocol/cancels.ts), created on first
 *                                     use, under the worker named in the job's claim (URI-encoded),
 *                                     so only that worker is woken; one per attempt (its token):
 *                                     {"reason"?,"at","pointer"}. Created only while the claim exists
 *                                     and the pointer is at the token (checked in the same transaction);
 *                                     deleted by the worker that acts on it, or by the leader once
 *                                     that attempt is over. The leader removes empty worker directories
 * ```
 *
 * An empty, idle queue holds a known number of nodes (docs/operations.md,
 * "Memory"): the directories of `directories()`, `meta` and `ids`, the tail
 * buckets once used and the nodes created on first use and kept; the rest
 * go when they empty or their owner is done. The queue test
 * idle-nodes.test.ts holds a queue that ran a mixed workload to this count.
 *
 * Every container of pointers (a lane, an hour of delayed jobs, a finished set)
 * is cut into buckets `b-<n>` of BUCKET_CAPACITY pointers, so no `getChildren`
 * returns more than a bucket: the directories above a bucket grow by one entry
 * per BUCKET_CAPACITY jobs (a lane, a finished set), per priority in use, per
 * hour of a day and per day with delayed jobs.
 */
import { sequenceOf } from '../zk/sequence.js';
import { validateQueueName } from './name-validation.js';
import {
  type ChildKey,
  DELAY_DAY_MS,
  DELAY_WINDOW_MS,
  type DepKind,
  depBucketOf,
  encodeQueueName,
  JOB_SHARDS,
  pad10,
  shardOf,
} from './znode-names.js';

export * from './name-validation.js';
export * from './znode-names.js';
export { sequenceOf };

/** The root of the queue a path of it lies in (its first segment: `/<queue>`). */
export function queueRootOf(path: string): string {
  const end = path.indexOf('/', 1);
  return end === -1 ? path : path.slice(0, end);
}

/** Paths of one queue, relative to the session namespace (the prefix). */
export class QueueLayout {
  readonly root: string;
  readonly meta: string;
  readonly jobsDir: string;
  readonly ids: string;
  readonly head: string;
  readonly ready: string;
  readonly claimsDir: string;
  readonly delayedDir: string;
  readonly completedDir: string;
  readonly failedDir: string;
  readonly receiptsDir: string;
  readonly idleDir: string;
  readonly workersDir: string;
  readonly leaderDir: string;
  readonly barriersDir: string;
  readonly eventsDir: string;
  readonly eventListeners: string;
  readonly eventLog: string;
  readonly drainedMark: string;
  readonly metricsDir: string;
  readonly schedulersDir: string;
  readonly settings: string;
  readonly limiter: string;
  readonly limiterCount: string;
  readonly slotsDir: string;
  readonly clock: string;
  readonly dedupDir: string;
  readonly childrenDir: string;
  readonly depsDir: string;
  readonly flowAddsDir: string;
  readonly cancelsDir: string;
  readonly flowChildren: string;
  readonly logsDir: string;

  constructor(readonly queue: string) {
    validateQueueName(queue);
    this.root = `/${encodeQueueName(queue)}`;
    this.meta = `${this.root}/meta`;
    this.jobsDir = `${this.root}/jobs`;
    this.ids = `${this.root}/ids`;
    this.head = `${this.root}/head`;
    this.ready = `${this.root}/ready`;
    this.claimsDir = `${this.root}/claims`;
    this.delayedDir = `${this.root}/delayed`;
    this.completedDir = `${this.root}/completed`;
    this.failedDir = `${this.root}/failed`;
    this.receiptsDir = `${this.root}/receipts`;
    this.idleDir = `${this.root}/idle`;
    this.workersDir = `${this.root}/workers`;
    this.leaderDir = `${this.root}/leader`;
    this.schedulersDir = `${this.root}/schedulers`;
    this.barriersDir = `${this.root}/barriers`;
    this.eventsDir = `${this.root}/events`;
    this.eventListeners = `${this.eventsDir}/listeners`;
    this.eventLog = `${this.eventsDir}/log`;
    this.drainedMark = `${this.eventsDir}/drained`;
    this.metricsDir = `${this.root}/metrics`;
    this.settings = `${this.root}/settings`;
    this.limiter = `${this.root}/limiter`;
    this.limiterCount = `${this.limiter}/count`;
    this.slotsDir = `${this.root}/slots`;
    this.clock = `${this.root}/clock`;
    this.dedupDir = `${this.root}/dedup`;
    this.childrenDir = `${this.root}/waiting-children`;
    this.depsDir = `${this.root}/deps`;
    this.flowAddsDir = `${this.root}/deps-adds`;
    this.cancelsDir = `${this.root}/cancels`;
    this.flowChildren = `${this.root}/flow-children`;
    this.logsDir = `${this.root}/logs`;
  }

  /** Directories created once per queue (shards included). */
  directories(): string[] {
    const shards = Array.from({ length: JOB_SHARDS }, (_, i) => this.shard(i.toString(16).padStart(2, '0')));
    return [
      this.root,
      this.jobsDir,
      ...shards,
      this.head,
      this.ready,
      this.claimsDir,
      this.delayedDir,
      this.completedDir,
      this.failedDir,
      this.receiptsDir,
      this.idleDir,
      this.workersDir,
      this.leaderDir,
      this.barriersDir,
      this.eventsDir,
      this.eventListeners,
      this.eventLog,
    ];
  }

  /** A job scheduler's node (its id, URI-encoded: scheduler ids are free-form). */
  scheduler(id: string): string {
    return `${this.schedulersDir}/s-${encodeURIComponent(id)}`;
  }

  /** The shard directory of a deduplication key (created on first use). */
  dedupShard(id: string): string {
    return `${this.dedupDir}/${shardOf(id)}`;
  }

  /** A deduplication key's node (its id, URI-encoded: deduplication ids are free-form). */
  dedupKey(id: string): string {
    return `${this.dedupShard(id)}/d-${encodeURIComponent(id)}`;
  }

  /** The shard directory of dependency nodes (created on first use). */
  depsShard(id: string): string {
    return `${this.depsDir}/${shardOf(id)}`;
  }

  /** A parent's dependency node. */
  deps(id: string): string {
    return `${this.depsShard(id)}/${id}`;
  }

  /** The bucket of a parent's dependency node that holds `child`'s entry. */
  depBucket(parentId: string, child: ChildKey): string {
    return `${this.deps(parentId)}/${depBucketOf(child)}`;
  }

  /** One child's entry in its bucket of its parent's dependency node (`kind`: u, p, i or f). */
  depEntry(parentId: string, kind: DepKind, child: ChildKey): string {
    return `${this.depBucket(parentId, child)}/${kind}-${encodeQueueName(child.queue)}:${child.id}`;
  }

  /** One child's entry right under its parent's dependency node, as written before buckets. */
  legacyDepEntry(parentId: string, kind: DepKind, child: ChildKey): string {
    return `${this.deps(parentId)}/${kind}-${encodeQueueName(child.queue)}:${child.id}`;
  }

  /** The shard directory of log nodes (created on first use). */
  logsShard(id: string): string {
    return `${this.logsDir}/${shardOf(id)}`;
  }

  /** A job's log node. */
  logs(id: string): string {
    return `${this.logsShard(id)}/${id}`;
  }

  /** The mark of a flow being added in several transactions (`name`: `a-<random>`). */
  flowAdd(name: string): string {
    return `${this.flowAddsDir}/${name}`;
  }

  /** The directory of the cancel requests for the jobs `worker` runs (its claims' `worker`). */
  cancelsOf(worker: string): string {
    return `${this.cancelsDir}/w-${encodeURIComponent(worker)}`;
  }

  /** The cancel request for the attempt of job `id` at `token`, run by `worker`. */
  cancel(worker: string, id: string, token: number): string {
    return `${this.cancelsOf(worker)}/${id}-${token}`;
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

  /** Bucket `n` of a container (a lane, an hour of delayed jobs, a finished set). */
  bucketOf(container: string, n: number): string {
    return `${container}/b-${pad10(n)}`;
  }

  bucket(lane: string, bucket: number): string {
    return this.bucketOf(this.lane(lane), bucket);
  }

  /** Whether `pointer` is a ready pointer (a claim takes a job by its ready pointer alone). */
  isReadyPointer(pointer: string): boolean {
    return pointer.startsWith(`${this.ready}/`);
  }

  /** Prefix of a ready pointer in `bucketPath`; ZooKeeper appends the sequence number. */
  readyPointerPrefix(bucketPath: string, id: string): string {
    return `${bucketPath}/qn-${id}-`;
  }

  claim(id: string): string {
    return `${this.claimsDir}/${id}`;
  }

  /** A global-concurrency slot by its name (`s-<k>`). */
  slot(name: string): string {
    return `${this.slotsDir}/${name}`;
  }

  /** The day directory of delayed jobs due at `due`. */
  delayDay(due: number): string {
    return `${this.delayedDir}/d-${pad10(Math.floor(Math.max(0, due) / DELAY_DAY_MS))}`;
  }

  /** The hour container of delayed jobs due at `due` (holds buckets). */
  delayHour(due: number): string {
    return `${this.delayDay(due)}/h-${pad10(Math.floor(Math.max(0, due) / DELAY_WINDOW_MS))}`;
  }

  /** Name of a delayed pointer (inside a bucket of its hour). */
  delayedName(due: number, id: string): string {
    return `${String(Math.max(0, Math.floor(due))).padStart(13, '0')}-${id}`;
  }

  /** Container of a finished set. */
  finishedDir(kind: 'completed' | 'failed'): string {
    return kind === 'completed' ? this.completedDir : this.failedDir;
  }

  /** The finished set a pointer path lies in, if any. */
  finishedSetOf(pointer: string): 'completed' | 'failed' | undefined {
    if (pointer.startsWith(`${this.completedDir}/`)) return 'completed';
    if (pointer.startsWith(`${this.failedDir}/`)) return 'failed';
    return undefined;
  }

  /** Prefix of a finished pointer in `bucketPath`; ZooKeeper appends the sequence number. */
  finishedPointerPrefix(kind: 'completed' | 'failed', bucketPath: string, id: string): string {
    return `${bucketPath}/${kind === 'completed' ? 'c' : 'f'}-${id}-`;
  }

  receipt(name: string): string {
    return `${this.receiptsDir}/${name}`;
  }

  eventPrefix(): string {
    return `${this.eventLog}/e-`;
  }

  worker(id: string): string {
    return `${this.workersDir}/${id}`;
  }

  /** Head of the per-minute series of finished jobs of one kind (its chunks are its children). */
  metricsSeries(kind: 'completed' | 'failed'): string {
    return `${this.metricsDir}/${kind}`;
  }

  /** The chunk of a series holding the counts of hour `hour` (minutes since the epoch / 60). */
  metricsChunk(kind: 'completed' | 'failed', hour: number): string {
    return `${this.metricsSeries(kind)}/h-${pad10(hour)}`;
  }
}
