/**
 * Flows: parents and their children, in any queues of one namespace.
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
 * A flow naming a job that exists already (BullMQ's duplicated id) gives it
 * the flow's parent in the same transaction: its record written at the
 * version read, unless it runs (its record is then its attempt's token).
 *
 * The parent's record, whose version is its attempt's fencing token, is
 * written only while the parent is not active: released from
 * waiting-children, or given a deferred failure while it waits. An active
 * parent learns of a failed child from the node's `failed` when it parks.
 */
import { NoNodeError } from '../../zk/errors.js';
import {
  FailedChildrenError,
  JobExistsError,
  JobStateError,
  MissingParentError,
  NoPendingChildrenError,
  PayloadTooLargeError,
} from '../errors.js';
import type { QueueEventRecord } from '../events.js';
import { type ChildKey, type DepKind, encodeQueueName } from '../layout.js';
import { decodeRecord, encodeRecord, type JobRecord, type ParentLink } from '../record.js';
import type { Place } from './attempts.js';
import { moveOps, parkedPath, pointerOp } from './builders.js';
import type { ProtocolContext as QueueStore, StoredJob } from './context.js';
import { depsTree, listDepEntries, readPaged } from './deps-entries.js';
import type { Built, ProtocolOp } from './executor.js';
import { addSplitFlow } from './flow-adds.js';

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
interface ParentRead {
  store: QueueStore;
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

function depsData(node: DepsNode): Buffer {
  return Buffer.from(JSON.stringify(node));
}

/** Reads a parent's dependency node, its record and the child's pending entry, in one request. */
async function readParent(store: QueueStore, link: ChildKey, child?: ChildKey): Promise<ParentRead> {
  const ps = store.sibling(link.queue);
  // its listeners, followed from now on: a release written from here logs the parent's event there
  if (ps !== store) await ps.events.start().catch(() => undefined);
  const { layout } = ps;
  const where = child ? [layout.depEntry(link.id, 'u', child), layout.legacyDepEntry(link.id, 'u', child)] : [];
  const reads = [
    { op: 'getData' as const, path: layout.deps(link.id) },
    { op: 'getData' as const, path: layout.job(link.id) },
    ...where.map((path) => ({ op: 'getData' as const, path })),
  ];
  const [deps, rec, ...entry] = await store.session.readMulti(reads);
  const failedRead = [deps, rec, ...entry].find((r) => r && !r.ok && !(r.error instanceof NoNodeError));
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
    parent: rec?.ok ? { record: decodeRecord(rec.data, layout.job(link.id)), version: rec.stat.version } : undefined,
    pending: where.find((_, i) => entry[i]?.ok === true),
  };
}

/**
 * Ops and events that belong to another queue than the executing store's:
 * its events as an explicit event node (when it has listeners), its wake-up
 * as an explicit rewrite of its `head`.
 */
function share(
  store: QueueStore,
  target: QueueStore,
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
async function releaseParent(ps: QueueStore, parent: StoredJob, deferredFailure?: string) {
  const r = parent.record;
  const delay = r.delay ?? 0;
  const due = delay > 0 ? ps.clock.fromLocal(Date.now() + delay) : 0;
  const record: JobRecord = { ...r, state: due ? 'delayed' : 'waiting', parked: undefined };
  if (due) record.due = due;
  if (deferredFailure) record.deferredFailure = deferredFailure;
  const to = await ps.destination(due ? { kind: 'delayed', due } : { kind: 'ready', lane: r.lane ?? 'p-0000000000' });
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
function entryBeside(entry: string, kind: DepKind, child: ChildKey): string {
  return `${entry.slice(0, entry.lastIndexOf('/'))}/${kind}-${encodeQueueName(child.queue)}:${child.id}`;
}

/**
 * The ops that fail a parent a flow add cut off midway left waiting for
 * children that will never come (see flow-adds.ts): it leaves
 * waiting-children with a deferred failure, so it fails at its next claim
 * without running. None unless it waits for children.
 */
export async function failHeldParentOps(
  store: QueueStore,
  parent: ChildKey,
  reason: string,
): Promise<Built | undefined> {
  const ps = store.sibling(parent.queue);
  const stored = await ps.getJob(parent.id);
  if (stored?.record.state !== 'waiting-children') return undefined;
  return share(store, ps, await releaseParent(ps, stored, reason));
}

function reread(op: ProtocolOp): ProtocolOp {
  return op.role ? op : { ...op, role: 'reread' };
}

/**
 * The ops that record a child's final outcome in its parent's dependencies,
 * releasing the parent when that was the last pending child (or the child's
 * failure policy says to go on now), for the child's finish transaction.
 * None when the child is no longer a pending dependency, or the policy
 * leaves a failure pending (BullMQ's default: the parent waits, unless the
 * child is deleted as it fails, which no retry could then bring back). Written at
 * the versions read, role `reread`: a sibling first makes the unit build again.
 */
export async function settleChildOps(
  store: QueueStore,
  child: JobRecord,
  s: Settlement,
  /** The child is deleted as it finishes: a failure that would stay pending takes it out instead (BullMQ's). */
  removed = false,
): Promise<Built | undefined> {
  const link = child.parentLink;
  if (!link) return undefined;
  const me: ChildKey = { queue: store.queue, id: child.id };
  let kind: DepKind | undefined;
  let data = EMPTY;
  let go = false; // release the parent whatever is pending
  let failed: string | undefined;
  if (s.kind === 'processed') {
    kind = 'p';
    data = Buffer.from(JSON.stringify(s.value ?? null));
  } else if (link.fpof) {
    kind = 'f';
    data = Buffer.from(s.reason);
    // BullMQ's reason names the child by its full key, `<prefix>:<queue>:<id>`
    failed = `child ${store.session.namespace.replace(/^\//, '')}:${childKey(me)} failed`;
    go = true;
  } else if (link.cpof || link.idof) {
    kind = 'i';
    data = Buffer.from(s.reason);
    go = link.cpof === true;
  } else if (!link.rdof && !removed) return undefined; // a plain failure stays pending: the parent waits
  const read = await readParent(store, link, me);
  if (!read.deps || !read.pending) return undefined;
  const ps = read.store;
  const node: DepsNode = { ...read.deps.node, pending: Math.max(0, read.deps.node.pending - 1) };
  if (failed && !node.failed) node.failed = failed;
  const ops: ProtocolOp[] = [
    { op: 'setData', path: ps.layout.deps(link.id), data: depsData(node), version: read.deps.version, role: 'reread' },
    { op: 'delete', path: read.pending, role: 'reread' },
  ];
  // the entry stays where it was (its bucket, or right under an older node)
  if (kind) ops.push({ op: 'create', path: entryBeside(read.pending, kind, me), data });
  const parent = read.parent;
  if (parent?.record.state === 'waiting-children' && (go || node.pending === 0)) {
    return joinBuilt({ ops }, share(store, ps, await releaseParent(ps, parent, failed)));
  }
  if (failed && parent && (parent.record.state === 'waiting' || parent.record.state === 'delayed')) {
    // not running yet: it fails at its claim (an active parent finds `failed` when it parks)
    const record = encodeRecord({ ...parent.record, deferredFailure: failed });
    ops.push({ op: 'setData', path: ps.layout.job(link.id), data: record, version: parent.version, role: 'reread' });
  }
  return { ops };
}

/**
 * The ops that make a finished child pending again for its parent, as it is
 * retried (BullMQ's): its processed, ignored or failed entry becomes
 * unprocessed and the count goes up, at the version read (role `reread`:
 * build the unit inside `build()`, so a sibling first makes it read again).
 * The parent's record is not written: a parent still waiting for children
 * waits for this one too. None when the child is pending already, was taken
 * out of the dependencies (removeDependencyOnFailure), or the parent's node
 * is gone.
 */
export async function rependOps(store: QueueStore, child: JobRecord): Promise<ProtocolOp[]> {
  const link = child.parentLink;
  if (!link) return [];
  const me: ChildKey = { queue: store.queue, id: child.id };
  const read = await readParent(store, link, me);
  if (!read.deps || read.pending) return [];
  const { layout } = read.store;
  const paths = entryPaths(layout, link.id, me, read.deps.node);
  const found = await store.session.readMulti(paths.map((p) => ({ op: 'getData' as const, path: p.path })));
  const at = paths.find((p, i) => p.kind !== 'u' && found[i]?.ok);
  if (!at) return [];
  const node: DepsNode = { ...read.deps.node, pending: read.deps.node.pending + 1 };
  if (at.kind === 'f' && node.failed?.endsWith(`:${childKey(me)} failed`)) delete node.failed;
  return [
    { op: 'setData', path: layout.deps(link.id), data: depsData(node), version: read.deps.version, role: 'reread' },
    { op: 'delete', path: at.path, role: 'reread' },
    { op: 'create', path: entryBeside(at.path, 'u', me), data: EMPTY, role: 'reread' },
  ];
}

/** Where a child's entry of each kind may lie: its bucket, and right under a node written before buckets. */
function entryPaths(
  layout: QueueStore['layout'],
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

/**
 * The share of a parent parking itself in waiting-children (moveToWaitingChildren):
 * its dependency node rewritten at the version read, so that a child
 * finishing meanwhile re-reads and sees it parked. Throws
 * NoPendingChildrenError when nothing is pending (the parent goes on), and
 * FailedChildrenError when a child failed it.
 */
export async function parkShare(store: QueueStore, id: string): Promise<ProtocolOp[]> {
  const read = await readParent(store, { queue: store.queue, id });
  if (read.deps?.node.failed) throw new FailedChildrenError(id, read.deps.node.failed);
  if (!read.deps || read.deps.node.pending === 0) throw new NoPendingChildrenError(id);
  return [
    {
      op: 'setData',
      path: store.layout.deps(id),
      data: depsData(read.deps.node),
      version: read.deps.version,
      role: 'reread',
    },
  ];
}

// ---- adding ------------------------------------------------------------------

/** A job of a flow: its queue, record (with `parentLink` for a child) and lane. */
export interface FlowJob {
  queue: string;
  record: JobRecord;
  lane: string;
}

/**
 * What became of one job of a flow. A job whose id exists is BullMQ's
 * duplicate: kept as it is, and given the flow's parent when it has none or
 * that one (a pending child, or a processed one when it completed);
 * `refused` when it has another parent that still exists (BullMQ's -7),
 * or is named a second time in the flow under another parent: left alone.
 */
export type FlowAdded = 'added' | 'duplicate' | 'refused';

/**
 * What a flow does with a job id that exists: `join` (BullMQ's duplicate,
 * see FlowAdded), or `refuse` the whole flow with JobExistsError (zkq's
 * FlowProducer and `Queue.add` with a parent: a taken custom id is an error
 * there, nothing is written).
 */
export type ExistingIds = 'join' | 'refuse';

/**
 * Throws MissingParentError when the links between jobs of the flow go
 * round (a root whose `opts.parent` is itself or one of its descendants):
 * its parents would wait for each other for ever. That parent does not
 * exist before the flow is added, as BullMQ answers.
 */
function refuseCycles(jobs: readonly FlowJob[]): void {
  const parentOf = new Map(jobs.map((j) => [childKey({ queue: j.queue, id: j.record.id }), j.record.parentLink]));
  for (const start of parentOf.keys()) {
    const seen = new Set<string>();
    for (let key: string | undefined = start; key !== undefined && parentOf.has(key); ) {
      if (seen.has(key)) throw new MissingParentError(key);
      seen.add(key);
      const link = parentOf.get(key);
      key = link && childKey(link);
    }
  }
}

/** A parent's share of a flow: its children, each with the entry it gets. */
export interface ParentShare {
  link: ParentLink;
  kids: { child: ChildKey; kind: 'u' | 'p'; data: Buffer }[];
}

/**
 * The records of `jobs` that exist, and the paths of a dependency node a job
 * left behind (a parent trimmed by retention), deepest first (one of more
 * than DROP_INLINE paths is swept first, as the leader would): read in
 * requests of listings paged under the packet limit (records have no
 * children), then the existing records.
 */
async function existing(
  stores: QueueStore[],
  jobs: readonly FlowJob[],
): Promise<{ found: (StoredJob | undefined)[]; stale: (string[] | undefined)[] }> {
  const store = stores[0] as QueueStore;
  const at = (i: number) => (stores[i] as QueueStore).layout;
  const reads = jobs.flatMap((j, i) => [
    { op: 'getChildren' as const, path: at(i).job(j.record.id) },
    { op: 'getData' as const, path: at(i).deps(j.record.id) },
  ]);
  const listed = await readPaged(store.session, reads);
  const failed = listed.find((r) => !r.ok && !(r.error instanceof NoNodeError));
  if (failed && !failed.ok) throw failed.error;
  const found = await Promise.all(
    jobs.map((j, i) => (listed[2 * i]?.ok ? (stores[i] as QueueStore).getJob(j.record.id) : undefined)),
  );
  const stale = await Promise.all(
    jobs.map(async (j, i) => {
      if (!listed[2 * i + 1]?.ok) return undefined;
      const js = stores[i] as QueueStore;
      // a node too large to go inside the add (its parent removed with many entries, left for the
      // leader's sweep) is swept now, a chunk per transaction, each proving the job still absent
      if (!found[i] && (await depsTree(js, j.record.id, DROP_INLINE)) === undefined) {
        await sweepOne(js, j.record.id, () => []);
      }
      return (await depsTree(js, j.record.id)) ?? [];
    }),
  );
  return { found, stale };
}

/**
 * A flow planned: each job's own share (its record, pointer, dependency
 * node and buckets, its entry in a parent created by the flow), built on
 * call, in the flow's order (parents before their children), and the
 * shares of parents outside the flow (or existing ones named in it).
 */
export interface FlowPlan {
  /** Per job: the ops of its share, built anew on each call (none for a job left alone). */
  parts: (() => Promise<Built>)[];
  /** Per job: the parent outside the flow that counts it in, if any. */
  outside: (string | undefined)[];
  /** Parents outside the flow, by key, with their new children. */
  parents: Map<string, ParentShare>;
  /** The jobs the flow creates that wait for children in it (a split add holds them: see flow-adds.ts). */
  held: ChildKey[];
}

/**
 * Plans a flow (see flowUnit). Fills `outcomes` per job. Throws
 * MissingParentError on a cycle, JobExistsError for a taken id (`refuse`),
 * JobStateError when an existing job to give a parent is running.
 */
export async function planFlow(
  store: QueueStore,
  jobs: readonly FlowJob[],
  outcomes: FlowAdded[] = [],
  existingIds: ExistingIds = 'join',
): Promise<FlowPlan> {
  refuseCycles(jobs);
  const stores = jobs.map((j) => store.sibling(j.queue));
  for (const s of new Set(stores)) await s.init();
  const { found, stale } = await existing(stores, jobs);
  if (existingIds === 'refuse') {
    const taken = found.findIndex((f) => f !== undefined);
    if (taken >= 0) throw new JobExistsError(jobs[taken]?.queue as string, jobs[taken]?.record.id as string);
  }
  const keyOf = (j: FlowJob) => childKey({ queue: j.queue, id: j.record.id });
  const created = new Map<string, number>();
  jobs.forEach((j, i) => {
    if (!found[i] && !created.has(keyOf(j))) created.set(keyOf(j), i);
  });
  const shares = new Map<string, ParentShare>();
  const shareOf = (link: ParentLink) => {
    const key = childKey(link);
    const sh = shares.get(key) ?? { link, kids: [] };
    shares.set(key, sh);
    return sh;
  };
  const extra: (Built | undefined)[] = [];
  const kidOf: (ParentShare['kids'][number] | undefined)[] = [];
  for (const [i, j] of jobs.entries()) {
    const link = j.record.parentLink;
    const me: ChildKey = { queue: j.queue, id: j.record.id };
    if (created.get(keyOf(j)) === i) {
      outcomes[i] = 'added';
      kidOf[i] = { child: me, kind: 'u', data: EMPTY };
      if (link) shareOf(link).kids.push(kidOf[i]);
      continue;
    }
    const js = stores[i] as QueueStore;
    const stored = found[i];
    const parts: Built[] = [];
    if (stored) {
      const attach = await attachExisting(js, stored, link);
      outcomes[i] = attach.outcome;
      kidOf[i] = attach.kid;
      if (attach.kid && link) shareOf(link).kids.push(attach.kid);
      if (attach.ops.length) parts.push({ ops: attach.ops });
    } else {
      // named twice in this flow: the first one stands
      const first = jobs[created.get(keyOf(j)) as number]?.record.parentLink;
      outcomes[i] = !link || (first && childKey(first) === childKey(link)) ? 'duplicate' : 'refused';
    }
    if (outcomes[i] === 'duplicate') {
      const events = [{ event: 'duplicated', jobId: me.id, ts: Date.now() }];
      parts.push(share(store, js, { ops: [], events, wakes: false }));
    }
    extra[i] = joinBuilt(...parts);
  }
  const outside = jobs.map((j, i) => {
    const link = j.record.parentLink;
    return link && kidOf[i] && !created.has(childKey(link)) ? childKey(link) : undefined;
  });
  const held: ChildKey[] = [];
  const parts = jobs.map((j, i) => {
    const js = stores[i] as QueueStore;
    const mine = created.get(keyOf(j)) === i ? shares.get(keyOf(j)) : undefined;
    if (mine?.kids.some((k) => k.kind === 'u')) held.push({ queue: j.queue, id: j.record.id });
    const link = j.record.parentLink;
    const kid = kidOf[i];
    // its entry in a parent the flow creates (one outside the flow counts it in its own share)
    const entry =
      link && kid && outside[i] === undefined
        ? (): Built => {
            const ps = store.sibling(link.queue);
            return { ops: [{ op: 'create', path: ps.layout.depEntry(link.id, kid.kind, kid.child), data: kid.data }] };
          }
        : undefined;
    const own = created.get(keyOf(j)) === i ? () => createdShare(store, js, j, mine, stale[i]) : async () => extra[i];
    return async () => joinBuilt(await own(), entry?.());
  });
  for (const key of created.keys()) shares.delete(key);
  return { parts, outside, parents: shares, held };
}

/**
 * The unit that adds a flow, whole, in one transaction: every new record
 * and pointer (a parent waiting for children in the flow parks in
 * waiting-children), each such parent's dependency node, buckets and
 * entries (one left by a trimmed job of the same id deleted first), and
 * for a child of a job outside the flow (or of an existing one), that
 * parent's node counted up at the version read. Fills `outcomes` per job.
 * Throws MissingParentError when such a parent does not exist, and
 * JobStateError when an existing job to give a parent is running (its
 * record is its attempt's token: it cannot be written).
 */
export async function flowUnit(
  store: QueueStore,
  jobs: readonly FlowJob[],
  outcomes: FlowAdded[] = [],
  existingIds: ExistingIds = 'join',
): Promise<Built> {
  return buildFlow(store, await planFlow(store, jobs, outcomes, existingIds));
}

/** A planned flow's ops, in one transaction (see flowUnit); `memos` keep each outside parent's reads between builds. */
async function buildFlow(store: QueueStore, plan: FlowPlan, memos = new Map<string, ShareMemo>()): Promise<Built> {
  const parts: Built[] = [];
  for (const part of plan.parts) parts.push(await part());
  // parents outside the flow, or existing ones named in it: count their new children in
  for (const [key, sh] of plan.parents) {
    const memo = memos.get(key) ?? {};
    memos.set(key, memo);
    parts.push(await existingParentShare(store, sh, memo));
  }
  return joinBuilt(...parts);
}

/**
 * The unit of one flow. Built again after a conflict: when only a parent's
 * dependency node moved on (a sibling finished, or joined, meanwhile), from
 * the same plan, reading that node again; otherwise planned anew.
 */
function flowAddUnit(store: QueueStore, jobs: readonly FlowJob[], outcomes: FlowAdded[], existingIds: ExistingIds) {
  let plan: FlowPlan | undefined;
  let nodes = new Set<string>();
  const memos = new Map<string, ShareMemo>();
  return {
    build: async () => {
      if (!plan) {
        plan = await planFlow(store, jobs, outcomes, existingIds);
        nodes = new Set([...plan.parents.values()].map((sh) => store.sibling(sh.link.queue).layout.deps(sh.link.id)));
      }
      return buildFlow(store, plan, memos);
    },
    dropped: (op: ProtocolOp) => {
      if (op.op === 'setData' && nodes.has(op.path)) return;
      plan = undefined;
      memos.clear();
    },
  };
}

/**
 * What an existing job named in a flow under `link` becomes: given that
 * parent when it has none or that one (its record rewritten, unless it has
 * that very link), left alone under another live parent (refused) or a
 * parent since gone. Throws JobStateError while it runs.
 */
async function attachExisting(
  js: QueueStore,
  stored: StoredJob,
  link: ParentLink | undefined,
): Promise<{ outcome: FlowAdded; kid?: ParentShare['kids'][number]; ops: ProtocolOp[] }> {
  const r = stored.record;
  if (!link) return { outcome: 'duplicate', ops: [] };
  const had = r.parentLink;
  if (had && childKey(had) !== childKey(link)) {
    const alive = await js.session.exists(js.sibling(had.queue).layout.job(had.id));
    return { outcome: alive ? 'refused' : 'duplicate', ops: [] };
  }
  // its record already names this very parent: a running attempt settles with it as it is
  const same = sameLink(had, link);
  if (!same && (await js.session.exists(js.layout.claim(r.id)))) {
    throw new JobStateError(r.id, 'is running: a running job cannot be given a parent');
  }
  const child: ChildKey = { queue: js.queue, id: r.id };
  const kid =
    r.state === 'completed'
      ? { child, kind: 'p' as const, data: Buffer.from(JSON.stringify(r.returnvalue ?? null)) }
      : { child, kind: 'u' as const, data: EMPTY };
  // at the version read: a job finishing meanwhile is read again (a pending entry must not outlive its finish)
  const path = js.layout.job(r.id);
  const ops: ProtocolOp[] = same
    ? [{ op: 'check', path, version: stored.version, role: 'reread' }]
    : [
        {
          op: 'setData',
          path,
          data: encodeRecord({ ...r, parentLink: link }),
          version: stored.version,
          role: 'reread',
        },
      ];
  return { outcome: 'duplicate', kid, ops };
}

function sameLink(a: ParentLink | undefined, b: ParentLink): boolean {
  if (!a || childKey(a) !== childKey(b)) return false;
  return (['fpof', 'cpof', 'idof', 'rdof'] as const).every((k) => Boolean(a[k]) === Boolean(b[k]));
}

/** The distinct buckets `kids` put their entries in, under parent `id` of `ps`. */
function bucketsOf(ps: QueueStore, id: string, kids: readonly ParentShare['kids'][number][]): string[] {
  return [...new Set(kids.map((k) => ps.layout.depBucket(id, k.child)))];
}

/**
 * A job the flow creates: its record and pointer, and when it has children
 * in the flow, its dependency node and the buckets their entries go in
 * (each child's share creates its entry). It parks in waiting-children
 * while one is pending, counted from the start; with none (each one an
 * existing completed job) it is released at once, as a child's finish would.
 */
async function createdShare(
  store: QueueStore,
  js: QueueStore,
  j: FlowJob,
  mine: ParentShare | undefined,
  stale: string[] | undefined,
) {
  const r = j.record;
  const pending = mine?.kids.filter((k) => k.kind === 'u').length ?? 0;
  const record: JobRecord = { ...r, lane: j.lane };
  let place: Place;
  if (mine && pending > 0 && r.state === 'waiting-children') place = { kind: 'waiting-children' };
  else if (r.state === 'delayed') place = { kind: 'delayed', due: r.due ?? Date.now() };
  else if (r.state === 'waiting-children' && (r.delay ?? 0) > 0) {
    place = { kind: 'delayed', due: js.clock.fromLocal(Date.now() + (r.delay ?? 0)) };
  } else place = { kind: 'ready', lane: j.lane };
  if (place.kind === 'delayed') Object.assign(record, { state: 'delayed', due: place.due });
  if (place.kind === 'ready') record.state = 'waiting';
  const to = await js.destination(place);
  if (to.kind === 'waiting-children') record.parked = parkedPath(r.id, to);
  if (mine) record.hasDeps = true;
  const ops: ProtocolOp[] = [
    { op: 'create', path: js.layout.job(r.id), data: encodeRecord(record), role: 'reread' },
    pointerOp(js.layout, r.id, to),
  ];
  // a node left by an earlier job of this id (trimmed without it) is not this job's
  if (stale) ops.push(...stale.map((path): ProtocolOp => ({ op: 'delete', path, role: 'reread' })));
  if (mine) {
    await js.ensureDir(js.layout.depsShard(r.id));
    ops.push({ op: 'create', path: js.layout.deps(r.id), data: depsData({ pending, bucketed: true }) });
    for (const path of bucketsOf(js, r.id, mine.kids)) ops.push({ op: 'create', path, data: EMPTY });
  }
  const ts = Date.now();
  const second: QueueEventRecord =
    to.kind === 'waiting-children'
      ? { event: 'waiting-children', jobId: r.id, ts }
      : to.kind === 'delayed'
        ? { event: 'delayed', jobId: r.id, delay: to.due, ts }
        : { event: 'waiting', jobId: r.id, ts };
  const events = [{ event: 'added', jobId: r.id, name: r.name, ts }, second];
  return share(store, js, { ops, events, wakes: to.kind === 'ready' });
}

/**
 * An existing parent's share: its node counted up by its new pending
 * children at the version read, the buckets they need and their entries
 * (an existing child already among them is left as it is), and a check
 * that the parent is where it was read. Throws MissingParentError when it
 * does not exist.
 */
export async function existingParentShare(store: QueueStore, sh: ParentShare, memo: ShareMemo = {}): Promise<Built> {
  const { link } = sh;
  const ps = store.sibling(link.queue);
  const path = ps.layout.deps(link.id);
  // an earlier job's node under this id (a parent trimmed without it) goes before anything is read of it
  if (!memo.kids && (await readParent(store, link)).stale) await dropStaleDeps(ps, link.id);
  // which children are new to it: read once per plan (many reads for many children), before the
  // node's version, so that a sibling's finish between the two costs a read, not all of them again
  memo.kids ??= await newKids(ps, sh);
  const kids = memo.kids;
  const have = new Set((await ps.children(path)).map((b) => `${path}/${b}`));
  const read = await readParent(store, link);
  if (!read.parent) throw new MissingParentError(childKey(link));
  if (kids.length === 0) return { ops: [] };
  await ps.ensureDir(ps.layout.depsShard(link.id));
  const next: DepsNode = { ...(read.deps?.node ?? { pending: 0, bucketed: true }) };
  next.pending += kids.filter((k) => k.kind === 'u').length;
  const ops: ProtocolOp[] = [
    read.deps
      ? { op: 'setData', path, data: depsData(next), version: read.deps.version, role: 'reread' }
      : { op: 'create', path, data: depsData(next), role: 'reread' },
    // the parent is still where it was read (a parent released or removed meanwhile is read again)
    { op: 'check', path: ps.layout.job(link.id), version: read.parent.version, role: 'reread' },
    ...bucketsOf(ps, link.id, kids)
      .filter((b) => !have.has(b))
      .map((b): ProtocolOp => ({ op: 'create', path: b, data: EMPTY, role: 'reread' })),
    ...kids.map(
      (k): ProtocolOp => ({ op: 'create', path: ps.layout.depEntry(link.id, k.kind, k.child), data: k.data }),
    ),
  ];
  return { ops };
}

/**
 * Deletes an earlier job's dependency node under `id`, DROP_CHUNK paths per
 * transaction, deepest first. A chunk that fails (another adder deleted
 * them first, or a bucket holds a new entry) is left alone.
 */
async function dropStaleDeps(ps: QueueStore, id: string): Promise<void> {
  const paths = (await depsTree(ps, id)) ?? [];
  for (let i = 0; i < paths.length; i += DROP_CHUNK) {
    const ops = paths.slice(i, i + DROP_CHUNK).map((path): ProtocolOp => ({ op: 'delete', path }));
    const [result] = await ps.executor.run([{ build: () => ({ ops }) }], { receipt: false });
    if (!result?.ok) return;
  }
}

/** What a parent's share keeps between its builds: the children found new to it. */
export interface ShareMemo {
  kids?: ParentShare['kids'];
}

/** The children of `sh` that have no entry in the parent's node yet (in a bucket, or under an older node). */
async function newKids(ps: QueueStore, sh: ParentShare): Promise<ParentShare['kids']> {
  const { link } = sh;
  const node = await readDeps(ps, link.id);
  const where = sh.kids.map((k) => entryPaths(ps.layout, link.id, k.child, node));
  const present = await readPaged(
    ps.session,
    where.flat().map((e) => ({ op: 'getChildren' as const, path: e.path })),
  );
  const starts: number[] = [];
  where.reduce((n, w) => starts.push(n) && n + w.length, 0);
  return sh.kids.filter((_, i) => {
    const from = starts[i] as number;
    return !present.slice(from, from + (where[i] as unknown[]).length).some((p) => p.ok);
  });
}

/** One flow's outcome: per job when it was added, or what failed it (nothing written then). */
export type FlowResult = { ok: true; outcomes: FlowAdded[] } | { ok: false; error: unknown };

/**
 * Adds flows, each whole in one transaction of its own (see flowUnit): one
 * that fails leaves the others. A flow too large for one transaction is
 * added in several (see flow-adds.ts). Resolves with each flow's outcome.
 */
export async function addFlows(
  store: QueueStore,
  flows: readonly (readonly FlowJob[])[],
  existingIds: ExistingIds = 'join',
): Promise<FlowResult[]> {
  await store.init();
  // the queues getting children say so first (retention then looks at the failed jobs it trims)
  const childQueues = new Set(flows.flatMap((jobs) => jobs.filter((j) => j.record.parentLink).map((j) => j.queue)));
  for (const queue of childQueues) {
    const cs = store.sibling(queue);
    await cs.containers.ensureDir(cs.layout.flowChildren);
  }
  const outcomes = flows.map((): FlowAdded[] => []);
  const results = await store.executor.run(
    flows.map((jobs, n) => flowAddUnit(store, jobs, outcomes[n] as FlowAdded[], existingIds)),
    { inFlight: 1 },
  );
  const out: FlowResult[] = [];
  for (const [n, r] of results.entries()) {
    const jobs = flows[n] as readonly FlowJob[];
    if (!r.ok && r.error instanceof PayloadTooLargeError && !r.op && jobs.length > 1) {
      // refused whole before anything was sent: added in several transactions
      const split = await addSplitFlow(store, jobs, existingIds).then(
        (o): FlowResult => ({ ok: true, outcomes: o }),
        (error): FlowResult => ({ ok: false, error }),
      );
      out.push(split);
    } else out.push(r.ok ? { ok: true, outcomes: outcomes[n] as FlowAdded[] } : { ok: false, error: r.error });
  }
  return out;
}

/** Adds one flow (see addFlows); throws what failed it, nothing written then. */
export async function addFlow(
  store: QueueStore,
  jobs: readonly FlowJob[],
  existingIds: ExistingIds = 'join',
): Promise<FlowAdded[]> {
  const [result] = await addFlows(store, [jobs], existingIds);
  if (!result?.ok) throw result?.error;
  return result.outcomes;
}

// ---- detaching and removing ----------------------------------------------------

/** Whether a job may still be a pending dependency of its parent (a completed or settled one is not). */
export function mayBePendingChild(r: JobRecord): boolean {
  const link = r.parentLink;
  if (!link || r.state === 'completed') return false;
  return r.state !== 'failed' || !(link.fpof || link.cpof || link.idof || link.rdof);
}

/** How a child leaves its parent's dependencies. */
export interface DetachOptions {
  /**
   * The ops carry role `reread`: the caller builds them inside its unit's
   * `build()`, so a sibling writing the node first makes the unit read
   * again. Without it the ops are at the versions read and the caller plans
   * again after a conflict.
   */
  reread?: boolean;
  /**
   * BullMQ's hard removal (drain, clean): a parent in the same queue left
   * with nothing pending is removed too (its record at the version read,
   * its dependencies, and so on up) instead of released, so no worker runs
   * it between its release and its removal.
   */
  hard?: boolean;
}

/**
 * The ops that take a pending child out of its parent's dependencies (it is
 * removed, or detached by hand), releasing a parent left with nothing
 * pending (or removing it: `hard`). None when it is not a pending dependency.
 */
export async function detachOps(
  store: QueueStore,
  child: JobRecord,
  o: DetachOptions = {},
): Promise<Built | undefined> {
  const link = child.parentLink;
  if (!link) return undefined;
  const me: ChildKey = { queue: store.queue, id: child.id };
  const read = await readParent(store, link, me);
  if (!read.deps || !read.pending) return undefined;
  const ps = read.store;
  const tag = (op: ProtocolOp): ProtocolOp => (o.reread ? reread(op) : op);
  const node: DepsNode = { ...read.deps.node, pending: Math.max(0, read.deps.node.pending - 1) };
  const parent = read.parent;
  const last = parent?.record.state === 'waiting-children' && node.pending === 0;
  if (last && parent && o.hard && ps === store) return removeParentHard(ps, parent, read.deps.version, o);
  const ops: ProtocolOp[] = [
    tag({ op: 'setData', path: ps.layout.deps(link.id), data: depsData(node), version: read.deps.version }),
    tag({ op: 'delete', path: read.pending }),
  ];
  if (last && parent) {
    const released = await releaseParent(ps, parent);
    // without `reread` the caller plans again; `into` stays: a bucket removed since the
    // remover cached it must be forgotten, or every plan picks it again
    const plain = o.reread
      ? released
      : {
          ...released,
          ops: released.ops.map(({ role, ...op }): ProtocolOp => (role === 'into' ? { ...op, role } : op)),
        };
    return joinBuilt({ ops }, share(store, ps, plain));
  }
  return { ops };
}

/**
 * Removes a parent whose last pending child goes by a hard removal: its
 * record at the version read, its waiting-children pointer, its dependency
 * node (checked at `depsVersion`) with its entries, and it leaves its own
 * parent the same way.
 */
async function removeParentHard(
  ps: QueueStore,
  parent: StoredJob,
  depsVersion: number,
  o: DetachOptions,
): Promise<Built> {
  const tag = (op: ProtocolOp): ProtocolOp => (o.reread ? reread(op) : op);
  const r = parent.record;
  const depsPath = ps.layout.deps(r.id);
  const tree = await depsTree(ps, r.id, DROP_INLINE);
  const ops: ProtocolOp[] = [tag({ op: 'delete', path: ps.layout.job(r.id), version: parent.version })];
  if (r.parked) ops.push(tag({ op: 'delete', path: r.parked }));
  // a node too large for one transaction is left to the leader's sweep of orphans
  if (tree && tree.length > 0) {
    ops.push(tag({ op: 'check', path: depsPath, version: depsVersion }));
    for (const path of tree) ops.push(tag({ op: 'delete', path }));
  }
  const events: QueueEventRecord[] = [{ event: 'removed', jobId: r.id, prev: 'waiting-children', ts: Date.now() }];
  return joinBuilt({ ops, events }, await detachOps(ps, r, o));
}

/**
 * Most nodes (entries and their buckets) a parent's dependency node may
 * hold for it to be deleted inside the change that removes the parent (its
 * finish, its removal); a node with more is left for the leader's sweep,
 * which deletes it in chunks, so the parent's own change always fits one
 * transaction.
 */
export const DROP_INLINE = 400;
/** Entries the sweep deletes per transaction. */
const DROP_CHUNK = 500;

/**
 * The ops that delete a parent's dependency node and its entries (with the
 * parent); none without one, or with more than DROP_INLINE entries (the
 * sweep takes those). They fail if a child changed an entry meanwhile:
 * `reread` for a unit whose build reads again (else the caller plans again).
 */
export async function dropDepsOps(store: QueueStore, id: string, role?: 'reread'): Promise<ProtocolOp[]> {
  const tree = await depsTree(store, id, DROP_INLINE);
  if (!tree) return [];
  const del = (p: string): ProtocolOp => (role ? { op: 'delete', path: p, role } : { op: 'delete', path: p });
  return tree.map(del);
}

/** Dependency nodes read at once by the sweep. */
const SWEEP_BATCH = 100;

/**
 * Deletes the dependency nodes of parents that are gone (retention trimmed
 * them, they were removed as they finished, or they had too many entries to
 * go with them): the leader's tidy-up, one shard at a time, a node's
 * entries DROP_CHUNK per transaction. Each transaction proves the parent
 * absent by creating and deleting the parent's record node in it, so a
 * parent added again meanwhile keeps its node. Resolves with the nodes deleted.
 */
export async function sweepOrphanDeps(store: QueueStore, fence: () => ProtocolOp[]): Promise<number> {
  const { layout, session } = store;
  let swept = 0;
  for (const shard of await store.children(layout.depsDir)) {
    const ids = await store.children(`${layout.depsDir}/${shard}`);
    for (let i = 0; i < ids.length; i += SWEEP_BATCH) {
      const batch = ids.slice(i, i + SWEEP_BATCH);
      const replies = await session.readMulti(batch.map((id) => ({ op: 'getData' as const, path: layout.job(id) })));
      const orphans = batch.filter((_, j) => {
        const r = replies[j];
        return r && !r.ok && r.error instanceof NoNodeError;
      });
      for (const id of orphans) if (await sweepOne(store, id, fence)) swept++;
    }
  }
  return swept;
}

/** Deletes one orphan node, its entries a chunk per transaction; false when its parent came back or it changed. */
async function sweepOne(store: QueueStore, id: string, fence: () => ProtocolOp[]): Promise<boolean> {
  const { layout } = store;
  // entries, then their buckets, then the node: each chunk deletes what it empties before it
  const paths = (await depsTree(store, id)) ?? [];
  for (let i = 0; i < paths.length; i += DROP_CHUNK) {
    const chunk = paths.slice(i, i + DROP_CHUNK);
    const ops: ProtocolOp[] = [
      { op: 'create', path: layout.job(id), data: EMPTY },
      ...chunk.map((path): ProtocolOp => ({ op: 'delete', path })),
      { op: 'delete', path: layout.job(id) },
    ];
    const [result] = await store.executor.run([{ build: () => ({ ops }) }], { fence, receipt: false });
    if (!result?.ok) return false;
  }
  return true;
}

// ---- reading -----------------------------------------------------------------

/** A parent's dependencies, by standing. */
export interface Dependencies {
  processed: { child: ChildKey; value: unknown }[];
  unprocessed: ChildKey[];
  ignored: { child: ChildKey; reason: string }[];
  failed: { child: ChildKey; reason: string }[];
}

/**
 * A parent's dependency entries (none without a node, or with an earlier
 * job's of this id: see ParentRead's `stale`), from its buckets and, for an
 * older node, from under it.
 */
async function entries(store: QueueStore, id: string) {
  const [deps, rec] = await store.session.readMulti([
    { op: 'getData', path: store.layout.deps(id) },
    { op: 'getData', path: store.layout.job(id) },
  ]);
  if (deps?.ok && rec?.ok && deps.stat.czxid < rec.stat.czxid) return [];
  return (await listDepEntries(store, id)).entries;
}

/** Counts of a parent's dependencies by standing. */
export async function dependencyCounts(
  store: QueueStore,
  id: string,
): Promise<{ processed: number; unprocessed: number; ignored: number; failed: number }> {
  const counts = { processed: 0, unprocessed: 0, ignored: 0, failed: 0 };
  const names: Record<DepKind, keyof typeof counts> = { p: 'processed', u: 'unprocessed', i: 'ignored', f: 'failed' };
  for (const e of await entries(store, id)) counts[names[e.kind]]++;
  return counts;
}

/** Dependency entries read at once. */
const DEPS_READ = 100;

/** A parent's dependencies, with the values of processed children and the reasons of the others. */
export async function getDependencies(store: QueueStore, id: string): Promise<Dependencies> {
  const out: Dependencies = { processed: [], unprocessed: [], ignored: [], failed: [] };
  const list = (await entries(store, id)).sort((a, b) => a.name.localeCompare(b.name));
  const withData = list.filter((e) => e.kind !== 'u');
  for (const e of list) if (e.kind === 'u') out.unprocessed.push(e.child);
  for (let i = 0; i < withData.length; i += DEPS_READ) {
    const batch = withData.slice(i, i + DEPS_READ);
    const replies = await store.session.readMulti(batch.map((e) => ({ op: 'getData' as const, path: e.path })));
    batch.forEach((e, j) => {
      const reply = replies[j];
      if (!reply?.ok) return; // moved meanwhile
      const text = reply.data.toString();
      if (e.kind === 'p') out.processed.push({ child: e.child, value: text ? JSON.parse(text) : null });
      else if (e.kind === 'i') out.ignored.push({ child: e.child, reason: text });
      else out.failed.push({ child: e.child, reason: text });
    });
  }
  return out;
}

/** A parent's dependency node, or undefined without one. */
export async function readDeps(store: QueueStore, id: string): Promise<DepsNode | undefined> {
  try {
    const { data } = await store.session.getData(store.layout.deps(id));
    return JSON.parse(data.toString()) as DepsNode;
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}
