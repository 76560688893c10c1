/**
 * Deduplication keys: BullMQ's `opts.deduplication` on the zkq protocol,
 * for both front-ends.
 *
 * While a job added with deduplication id D is *kept*, another add with D
 * adds nothing: it resolves with the kept job's id and logs `deduplicated`
 * {jobId: the kept job, deduplicationId: D, deduplicatedJobId: the id not added}.
 *
 * The key `dedup/<shard>/d-<D>` (layout.ts) holds {"job", "ttl"?, "next"?}.
 * It is created in the transaction that adds the job it names, so the create
 * is the test-and-set: of concurrent adds with D, one job is added. It is
 * *live*
 * - with `ttl` (throttle): for `ttl` ms from the node's mtime, judged on
 *   ZooKeeper's clock (`serverNow()`), never on a client's; whatever
 *   became of its job, as in BullMQ (a job removed as it completed still
 *   throttles);
 * - without (simple mode, keepLastIfActive): while its job exists and has
 *   neither completed nor failed.
 * Otherwise it is stale, and taken over by the next add with D at the
 * version read, in the transaction that adds its job (dedup-take-over.ts).
 *
 * Every key has an owner that deletes it, as in BullMQ:
 * - the finish: a job done for good (completed or failed, not a retry)
 *   deletes a key without ttl that still names it, at the version read, in
 *   its finish transaction (a key taken over by a newer job is left alone);
 * - the removal: `remove()`, drain and clean delete the key naming the
 *   job they remove, ttl or not, in their own transaction; obliterate
 *   deletes everything;
 * - the ttl: a key with a ttl outlives its job (a job removed as it
 *   completed still throttles) and is deleted once the ttl ran out by the
 *   leader's sweep (dedup-sweep.ts), which also deletes a key whose
 *   job is gone (one a finish gave up on after DEDUP_ROUNDS conflicts, or
 *   written by an older zkq) and the shard directories it leaves empty.
 * Retention trims leave keys alone: a key without ttl went at the finish.
 *
 * A key deleted and created again by a newer add starts again at version 0,
 * so a version read is no fence on its own: a reader reads the key again
 * after its job (`look`) and judges it only while it still names that job;
 * a write planned from a key naming a job that exists checks that the job
 * still does (its removal deletes the key); and a delete no job fences (the
 * sweep's, one by hand) bumps the generation of keys, `dedup/`'s version,
 * which the write of an add, a removal or a finish checks. `dedup/` stays once made, so its version
 * only grows.
 *
 * `extend` rewrites a live ttl key on each duplicate (a new mtime);
 * `replace` removes the kept job while it is still delayed and adds the new
 * one in its place (the key keeps its remaining ttl unless `extend`);
 * `reschedule` moves a delayed kept job to the duplicate's delay;
 * `keepLastIfActive` parks a duplicate of an active kept job in the key (the
 * latest wins; ttl is ignored) and the kept job's finish adds it, in the
 * finish transaction: only a kept job added with it takes a parked job.
 */
import { NoNodeError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../event-record.js';
import type { JobRecord, RecordState } from '../record.js';
import type { DeduplicationOptions } from '../types.js';
import type { ProtocolContext, StoredJob } from './context.js';

/** What a key node holds. */
export interface DedupKey {
  /** The kept job. */
  job: string;
  /** Throttle: live this many ms after the node's mtime. */
  ttl?: number;
  /** keepLastIfActive: the job to add when the kept one finishes. */
  next?: JobRecord;
}

/** A key as read: its data, and the stat that fences a write and dates it. */
export interface KeyRead {
  key: DedupKey;
  version: number;
  /** When the key was last written, on ZooKeeper's clock. */
  mtime: number;
}

/** Times a write that lost a race for a key is planned again before giving up with the conflict. */
export const DEDUP_ROUNDS = 16;

export function encodeKey(key: DedupKey): Buffer {
  return Buffer.from(JSON.stringify(key));
}

/** The options of a record's deduplication, if any. */
export function dedupOf(record: JobRecord): DeduplicationOptions | undefined {
  return record.opts.deduplication;
}

/** The ttl a key written for `o` carries: none with keepLastIfActive (BullMQ ignores it then). */
export function keyTtl(o: DeduplicationOptions): number | undefined {
  return o.keepLastIfActive ? undefined : o.ttl;
}

/** The key a job added with deduplication creates with itself. */
export function keyOnAdd(record: JobRecord): { id: string; data: Buffer } | undefined {
  const o = dedupOf(record);
  if (!o) return undefined;
  const ttl = keyTtl(o);
  return { id: o.id, data: encodeKey(ttl === undefined ? { job: record.id } : { job: record.id, ttl }) };
}

/** The key of `id`, or undefined when there is none. Unreadable data reads as a key of no job (stale). */
export async function readKey(store: ProtocolContext, id: string): Promise<KeyRead | undefined> {
  try {
    const { data, stat } = await store.session.getData(store.layout.dedupKey(id));
    let key: DedupKey = { job: '' };
    try {
      const parsed = JSON.parse(data.toString()) as Partial<DedupKey> | null;
      if (parsed && typeof parsed.job === 'string') key = parsed as DedupKey;
    } catch {
      // not a key zkq wrote: stale, taken over by the next add
    }
    return { key, version: stat.version, mtime: stat.mtime };
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

/**
 * Whether a key is live (pure): a ttl key until its ttl ran out on
 * ZooKeeper's clock (`now`: its time now), any other while its job exists
 * (`state`) and is not finished.
 */
export function isLive(read: KeyRead, now: number | undefined, state: RecordState | undefined): boolean {
  const { ttl } = read.key;
  if (ttl !== undefined) return now !== undefined && now - read.mtime < ttl;
  return state !== undefined && state !== 'completed' && state !== 'failed';
}

/** What an add (or a read) sees of a key. */
export interface Seen {
  read: KeyRead | undefined;
  live: boolean;
  /** The kept job, when it exists. */
  kept: StoredJob | undefined;
  /** The kept job has a claim (it is running). */
  active: boolean;
  /** ZooKeeper's time when the key was judged (ttl keys only). */
  now: number | undefined;
  /** The generation of keys (`dedup/`'s version) read before `read`, when there is a key. */
  generation?: number;
}

/** Whether two reads of a key saw the same node naming the same job (a key created again names another). */
function sameKey(a: KeyRead, b: KeyRead | undefined): b is KeyRead {
  return b !== undefined && a.version === b.version && a.key.job === b.key.job;
}

/**
 * Reads key `id` and judges it; with `wantActive`, also whether the kept job
 * runs. The key is read again after its job and the generation of keys (the
 * requests of a session are served in order), and `read` is that second
 * read: a key deleted with its job (a finish, a removal) and created again by
 * a newer add starts again at the version read first, so only a key that
 * still names the job read is judged by it; one that changed is looked at
 * again.
 */
export async function look(store: ProtocolContext, id: string, wantActive = false): Promise<Seen> {
  let read = await readKey(store, id);
  for (let round = 1; ; round++) {
    if (!read) return { read, live: false, kept: undefined, active: false, now: undefined };
    const job = read.key.job;
    const [kept, dir, again, now, claim] = await Promise.all([
      job ? store.getJob(job) : undefined,
      store.session.exists(store.layout.dedupDir),
      readKey(store, id),
      read.key.ttl !== undefined ? store.serverNow() : undefined,
      wantActive && job ? store.session.exists(store.layout.claim(job)) : null,
    ]);
    if (sameKey(read, again)) {
      const live = isLive(again, now, kept?.record.state);
      return { read: again, live, kept, active: Boolean(claim), now, generation: dir?.version };
    }
    // seen as no key: the add creates one, which fails while a key exists, and is planned again
    read = round < DEDUP_ROUNDS ? again : undefined;
  }
}

/** The kept job's id while key `id` is live, else null (BullMQ's getDeduplicationJobId). */
export async function getDeduplicationJobId(store: ProtocolContext, id: string): Promise<string | null> {
  await store.init();
  const seen = await look(store, id);
  return seen.live && seen.read ? seen.read.key.job : null;
}

/** The `deduplicated` event. */
export function dedupEvent(kept: string, deduplicationId: string, deduplicated: string): QueueEventRecord {
  return { event: 'deduplicated', jobId: kept, deduplicationId, deduplicatedJobId: deduplicated, ts: Date.now() };
}
