/**
 * A parent's dependency node, as every change of a child's standing reads
 * and writes it (flow-settle.ts, flow-detach.ts, the flow adds).
 *
 * A parent's dependencies live in its own queue, at `deps/<shard>/<id>`:
 * the node's data counts the children still pending, and one entry per
 * child says where it stands (`u` unprocessed, `p` processed with its
 * return value, `i` ignored, `f` failed). Every change of a child's standing
 * writes that node at the version read, in the transaction of the change
 * itself (the child's finish, its removal, the parent's park), so:
 *
 * - the last pending child to finish sees the count reach 0 and releases the
 *   parent from `waiting-children` in its own finish transaction: nothing is
 *   left for a crash to lose between "last child done" and "parent ready";
 * - two siblings finishing at once cannot both see the same count: the
 *   second write fails and its unit is built again (role `reread`);
 * - a parent parking itself (moveToWaitingChildren) writes the node too, so
 *   a child finishing meanwhile either sees it parked or fails and re-reads.
 *
 * The parent's record, whose version is its attempt's fencing token, is
 * written only while the parent is not active: released from
 * waiting-children, or given a deferred failure while it waits. An active
 * parent learns of a failed child from the node's `failed` when it parks.
 */

import { NoNodeError } from '../../zk/errors.js';
import type { QueueEventRecord } from '../events.js';
import { type ChildKey, type DepKind, encodeQueueName } from '../layout.js';
import { decodeRecord, encodeRecord, type JobRecord } from '../record.js';
import { claimedView } from './attempt-counts.js';
import { moveOps } from './builders.js';
import { PLAIN_LANE } from './claim.js';
import type { ProtocolContext, StoredJob } from './context.js';
import type { Built, ProtocolOp } from './executor.js';

const EMPTY = Buffer.alloc(0);

/**
 * A parent's dependency node: children still pending, the first child that
 * failed its parent (fpof), and whether every entry lies in a bucket (a node
 * written before buckets may hold some right under it).
 */
export interface DepsNode {
  pending: number;
  failed?: string;
  bucketed?: boolean;
}

/** What a child's final outcome means to its parent. */
export type Settlement = { kind: 'processed'; value: unknown } | { kind: 'failed'; reason: string };

/** A parent as read for a change of its dependencies. */
export interface ParentRead {
  store: ProtocolContext;
  deps: { node: DepsNode; version: number } | undefined;
  parent: StoredJob | undefined;
  /** The child's `u` entry, when it is still a pending dependency (in its bucket, or under an older node). */
  pending: string | undefined;
  /**
   * The dependency node there is an earlier job's of this id (created before
   * the record: a parent trimmed without it), read as none (`deps` undefined).
   */
  stale: boolean;
}

/** The key BullMQ-style callers name a child by: `<queue>:<id>`. */
export function childKey(c: ChildKey): string {
  return `${c.queue}:${c.id}`;
}

export function depsData(node: DepsNode): Buffer {
  return Buffer.from(JSON.stringify(node));
}

/** Reads a parent's dependency node, its record and the child's pending entry, in one request. */
export async function readParent(store: ProtocolContext, link: ChildKey, child?: ChildKey): Promise<ParentRead> {
  const ps = store.sibling(link.queue);
  // its listeners, followed from now on: a release written from here logs the parent's event there
  if (ps !== store) await ps.events.start().catch(() => undefined);
  const { layout } = ps;
  const where = child ? [layout.depEntry(link.id, 'u', child), layout.legacyDepEntry(link.id, 'u', child)] : [];
  const reads = [
    { op: 'getData' as const, path: layout.deps(link.id) },
    { op: 'getData' as const, path: layout.job(link.id) },
    { op: 'getData' as const, path: layout.claim(link.id) },
    ...where.map((path) => ({ op: 'getData' as const, path })),
  ];
  const [deps, rec, claim, ...entry] = await store.session.readMulti(reads);
  const failedRead = [deps, rec, claim, ...entry].find((r) => r && !r.ok && !(r.error instanceof NoNodeError));
  if (failedRead && !failedRead.ok) throw failedRead.error;
  // records are created only by adds, with their node or before it: one older than the record is not its own
  const stale = deps?.ok === true && rec?.ok === true && deps.stat.czxid < rec.stat.czxid;
  return {
    store: ps,
    stale,
    deps:
      deps?.ok && !stale
        ? { node: JSON.parse(deps.data.toString()) as DepsNode, version: deps.stat.version }
        : undefined,
    parent: rec?.ok
      ? { record: parentRecord(rec.data, layout.job(link.id), claim), version: rec.stat.version }
      : undefined,
    pending: where.find((_, i) => entry[i]?.ok === true),
  };
}

/** The parent's record as read, `active` while its claim node is there (a claim writes no record). */
function parentRecord(data: Buffer, path: string, claim: { ok: boolean; data?: Buffer } | undefined): JobRecord {
  const record = decodeRecord(data, path);
  return claim?.ok && claim.data && record.state === 'waiting' ? claimedView(record, claim.data) : record;
}

/**
 * Ops and events that belong to another queue than the executing store's:
 * its events as an explicit event node (when it has listeners), its wake-up
 * as an explicit rewrite of its `head`.
 */
export function share(
  store: ProtocolContext,
  target: ProtocolContext,
  part: { ops: ProtocolOp[]; events: QueueEventRecord[]; wakes: boolean },
): Built {
  if (target === store) return part;
  const ops = [...part.ops];
  const ev = target.events.op(part.events);
  if (ev) ops.push(ev);
  if (part.wakes) ops.push({ op: 'setData', path: target.layout.head, data: EMPTY });
  return { ops };
}

/** Joins built parts into one unit's ops, events and wake-up. */
export function joinBuilt(...parts: (Built | undefined)[]): Built {
  const out: Built = { ops: [], events: [] };
  for (const p of parts) {
    if (!p) continue;
    out.ops.push(...p.ops);
    out.events?.push(...(p.events ?? []));
    if (p.wakes) out.wakes = true;
  }
  return out;
}

/**
 * Moves a parent out of waiting-children (its record at the version read):
 * to waiting, or delayed by its own delay, with a deferred failure to act
 * on at its next claim when a child failed it.
 */
export async function releaseParent(ps: ProtocolContext, parent: StoredJob, deferredFailure?: string) {
  const r = parent.record;
  const delay = r.delay ?? 0;
  const due = delay > 0 ? ps.clock.fromLocal(Date.now() + delay) : 0;
  const record: JobRecord = { ...r, state: due ? 'delayed' : 'waiting', parked: undefined };
  if (due) record.due = due;
  if (deferredFailure) record.deferredFailure = deferredFailure;
  const to = await ps.destination(due ? { kind: 'delayed', due } : { kind: 'ready', lane: r.lane ?? PLAIN_LANE });
  const ops = moveOps(
    ps.layout,
    { id: r.id, version: parent.version, record: encodeRecord(record), from: r.parked },
    to,
  );
  const ts = Date.now();
  const events: QueueEventRecord[] = [
    due
      ? { event: 'delayed', jobId: r.id, delay: due, ts }
      : { event: 'waiting', jobId: r.id, prev: 'waiting-children', ts },
  ];
  return { ops: ops.map(reread), events, wakes: !due };
}

/** The path of `child`'s entry of `kind` in the directory of `entry` (its bucket, or an older node). */
export function entryBeside(entry: string, kind: DepKind, child: ChildKey): string {
  return `${entry.slice(0, entry.lastIndexOf('/'))}/${kind}-${encodeQueueName(child.queue)}:${child.id}`;
}

/** The distinct buckets `kids` put their entries in, under parent `id` of `ps`. */
export function bucketsOf(ps: ProtocolContext, id: string, kids: readonly { child: ChildKey }[]): string[] {
  return [...new Set(kids.map((k) => ps.layout.depBucket(id, k.child)))];
}

export function reread(op: ProtocolOp): ProtocolOp {
  return op.role ? op : { ...op, role: 'reread' };
}

/** Where a child's entry of each kind may lie: its bucket, and right under a node written before buckets. */
export function entryPaths(
  layout: ProtocolContext['layout'],
  parentId: string,
  child: ChildKey,
  node: DepsNode | undefined,
): { kind: DepKind; path: string }[] {
  const kinds: DepKind[] = ['u', 'p', 'i', 'f'];
  const out = kinds.map((kind) => ({ kind, path: layout.depEntry(parentId, kind, child) }));
  if (node && !node.bucketed)
    out.push(...kinds.map((kind) => ({ kind, path: layout.legacyDepEntry(parentId, kind, child) })));
  return out;
}
