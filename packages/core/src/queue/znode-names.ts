/**
 * The names inside the znode layout (see layout.ts, which re-exports them):
 * its constants, a queue name as a node name, and the codecs and parsers of
 * the names the layout gives its nodes (shards, lanes, pointers, buckets,
 * cancel requests, dependency entries). Pure: no session, no paths.
 */

/** Pointers per ready bucket before producers roll to the next one. */
export const BUCKET_CAPACITY = 2000;
/** Shards of the job record store. */
export const JOB_SHARDS = 256;
/** Width of the hour container of delayed jobs, ms. */
export const DELAY_WINDOW_MS = 3_600_000;
/** Width of the day directory that groups hour containers, ms. */
export const DELAY_DAY_MS = 86_400_000;
/**
 * Format of the znode layout (meta's `layout`); a queue of another format is
 * refused. 3: a claim's token is its ready pointer's version (2: the record's);
 * `zkq migrate` (protocol/migrate.ts) moves a queue from 2 to 3.
 */
export const LAYOUT_VERSION = 3;
/** The layout `zkq migrate` moves a queue from. */
export const PREVIOUS_LAYOUT_VERSION = 2;
/** Largest block of ids one write of the `ids` counter hands out (blocks grow with demand up to it). */
export const ID_BLOCK_SIZE = 1000;
/** Lane of jobs added with `lifo: true`. */
export const LIFO_LANE = 'l';
/** Highest priority BullMQ accepts (2^21). */
export const MAX_PRIORITY = 2_097_152;

/** Characters a queue's node name holds as they are; every other one is percent-encoded. */
const NODE_SAFE = /[^A-Za-z0-9._-]/gu;

/**
 * A queue name as a node name: every character outside A-Z a-z 0-9 . _ -
 * as the percent-encoded bytes of its UTF-8 (so the names of earlier
 * versions, all of those characters, keep their nodes). The one place a
 * name becomes a path; decodeQueueName reads it back.
 */
export function encodeQueueName(name: string): string {
  return name.replace(NODE_SAFE, (ch) =>
    [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** The queue name a node name encodes (encodeQueueName), or undefined when it encodes none. */
export function decodeQueueName(node: string): string | undefined {
  if (!/^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(node)) return undefined;
  try {
    const name = decodeURIComponent(node);
    return encodeQueueName(name) === node ? name : undefined;
  } catch {
    return undefined;
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

/** The job id and attempt token a cancel request `<jobId>-<token>` names (ids may hold `-`, tokens not). */
export function parseCancelName(name: string): { id: string; token: number } | undefined {
  const m = /^(.+)-(\d+)$/.exec(name);
  return m ? { id: m[1] as string, token: Number(m[2]) } : undefined;
}

/** The number in a `b-<n>`, `d-<n>` or `h-<n>` container name. */
export function numberOf(name: string): number {
  return Number(name.slice(2));
}

/** A child's standing in its parent's dependencies: unprocessed, processed, ignored, failed. */
export type DepKind = 'u' | 'p' | 'i' | 'f';

/** A job anywhere in the namespace: its queue and id (a flow's child or parent). */
export interface ChildKey {
  queue: string;
  id: string;
}

/** Buckets of a parent's dependency entries (a hash of the child's key picks one). */
export const DEP_BUCKETS = 256;

/** The bucket name `b-<xx>` of a child's dependency entry under its parent's node. */
export function depBucketOf(child: ChildKey): string {
  return `b-${shardOf(`${child.queue}:${child.id}`)}`;
}

/** Whether a name under a parent's dependency node is a bucket (else an entry written before buckets). */
export function isDepBucket(name: string): boolean {
  return /^b-[0-9a-f]{2}$/.test(name);
}

/** The kind and child named by a dependency entry `<k>-<queue>:<id>`. */
export function parseDepEntry(name: string): { kind: DepKind; child: ChildKey } | undefined {
  const m = /^([upif])-([A-Za-z0-9._%-]+):(.+)$/.exec(name);
  const queue = m && decodeQueueName(m[2] as string);
  return m && queue ? { kind: m[1] as DepKind, child: { queue, id: m[3] as string } } : undefined;
}
