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
} from '../errors.js';
import type { QueueEventRecord } from '../events.js';
import { type ChildKey, type DepKind, parseDepEntry } from '../layout.js';
import { decodeRecord, encodeRecord, type JobRecord, type ParentLink } from '../record.js';
import type { QueueStore, StoredJob } from '../store.js';
import type { Place } from './attempts.js';
import { moveOps, parkedPath, pointerOp } from './builders.js';
import type { Built, ProtocolOp } from './executor.js';

const EMPTY = Buffer.alloc(0);

/** A parent's dependency node: children still pending, and the first child that failed its parent (fpof). */
export interface DepsNode {
  pending: number;
  failed?: string;
}

/** What a child's final outcome means to its parent. */
export type Settlement = { kind: 'processed'; value: unknown } | { kind: 'failed'; reason: string };

/** A parent as read for a change of its dependencies. */
interface ParentRead {
  store: QueueStore;
  deps: { node: DepsNode; version: number } | undefined;
  parent: StoredJob | undefined;
  /** The child's `u` entry exists: it is still a pending dependency. */
  pending: boolean;
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
  const reads = [
    { op: 'getData' as const, path: layout.deps(link.id) },
    { op: 'getData' as const, path: layout.job(link.id) },
    ...(child ? [{ op: 'getData' as const, path: layout.depEntry(link.id, 'u', child) }] : []),
  ];
  const [deps, rec, entry] = await store.session.readMulti(reads);
  const failedRead = [deps, rec, entry].find((r) => r && !r.ok && !(r.error instanceof NoNodeError));
  if (failedRead && !failedRead.ok) throw failedRead.error;
  return {
    store: ps,
    deps: deps?.ok ? { node: JSON.parse(deps.data.toString()) as DepsNode, version: deps.stat.version } : undefined,
    parent: rec?.ok ? { record: decodeRecord(rec.data, layout.job(link.id)), version: rec.stat.version } : undefined,
    pending: entry?.ok === true,
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
    { op: 'delete', path: ps.layout.depEntry(link.id, 'u', me), role: 'reread' },
  ];
  if (kind) ops.push({ op: 'create', path: ps.layout.depEntry(link.id, kind, me), data });
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
  const kinds = ['p', 'i', 'f'] as const;
  const found = await store.session.readMulti(
    kinds.map((k) => ({ op: 'getData' as const, path: layout.depEntry(link.id, k, me) })),
  );
  const kind = kinds.find((_, i) => found[i]?.ok);
  if (!kind) return [];
  const node: DepsNode = { ...read.deps.node, pending: read.deps.node.pending + 1 };
  if (kind === 'f' && node.failed?.endsWith(`:${childKey(me)} failed`)) delete node.failed;
  return [
    { op: 'setData', path: layout.deps(link.id), data: depsData(node), version: read.deps.version, role: 'reread' },
    { op: 'delete', path: layout.depEntry(link.id, kind, me), role: 'reread' },
    { op: 'create', path: layout.depEntry(link.id, 'u', me), data: EMPTY, role: 'reread' },
  ];
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
interface ParentShare {
  link: ParentLink;
  kids: { child: ChildKey; kind: 'u' | 'p'; data: Buffer }[];
}

/**
 * The records of `jobs` that exist, and the entries of a dependency node a
 * job left behind (a parent trimmed by retention): read in one request of
 * listings (records have no children), then the existing records.
 */
async function existing(
  stores: QueueStore[],
  jobs: readonly FlowJob[],
): Promise<{ found: (StoredJob | undefined)[]; stale: (string[] | undefined)[] }> {
  const store = stores[0] as QueueStore;
  const at = (i: number) => (stores[i] as QueueStore).layout;
  const reads = jobs.flatMap((j, i) => [
    { op: 'getChildren' as const, path: at(i).job(j.record.id) },
    { op: 'getChildren' as const, path: at(i).deps(j.record.id) },
  ]);
  const listed = await store.session.readMulti(reads);
  const failed = listed.find((r) => !r.ok && !(r.error instanceof NoNodeError));
  if (failed && !failed.ok) throw failed.error;
  const found = await Promise.all(
    jobs.map((j, i) => (listed[2 * i]?.ok ? (stores[i] as QueueStore).getJob(j.record.id) : undefined)),
  );
  const stale = jobs.map((_, i) => {
    const r = listed[2 * i + 1];
    return r?.ok && 'children' in r ? r.children : undefined;
  });
  return { found, stale };
}

/**
 * The unit that adds a flow, whole, in one transaction: every new record
 * and pointer (a parent waiting for children in the flow parks in
 * waiting-children), each such parent's dependency node and entries (one
 * left by a trimmed job of the same id deleted first), and
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
  const parents = new Map<string, ParentShare>();
  const shareOf = (link: ParentLink) => {
    const key = childKey(link);
    const sh = parents.get(key) ?? { link, kids: [] };
    parents.set(key, sh);
    return sh;
  };
  const parts: Built[] = [];
  for (const [i, j] of jobs.entries()) {
    const link = j.record.parentLink;
    const me: ChildKey = { queue: j.queue, id: j.record.id };
    if (created.get(keyOf(j)) === i) {
      outcomes[i] = 'added';
      if (link) shareOf(link).kids.push({ child: me, kind: 'u', data: EMPTY });
      continue;
    }
    const js = stores[i] as QueueStore;
    const stored = found[i];
    if (stored) {
      const attach = await attachExisting(js, stored, link);
      outcomes[i] = attach.outcome;
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
  }
  for (const [key, i] of created) {
    const j = jobs[i] as FlowJob;
    parts.push(await createdShare(store, stores[i] as QueueStore, j, parents.get(key), stale[i]));
    parents.delete(key);
  }
  // parents outside the flow, or existing ones named in it: count their new children in
  for (const sh of parents.values()) parts.push(await existingParentShare(store, sh));
  return joinBuilt(...parts);
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

/**
 * A job the flow creates: its record and pointer, and when it has children
 * in the flow, its dependency node and entries. It parks in waiting-children
 * while one is pending; with none (each one an existing completed job) it
 * is released at once, as a child's finish would.
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
  if (stale) {
    // a node left by an earlier job of this id (trimmed without it) is not this job's
    const path = js.layout.deps(r.id);
    ops.push(...stale.map((n): ProtocolOp => ({ op: 'delete', path: `${path}/${n}`, role: 'reread' })));
    ops.push({ op: 'delete', path, role: 'reread' });
  }
  if (mine) {
    await js.ensureDir(js.layout.depsShard(r.id));
    ops.push({ op: 'create', path: js.layout.deps(r.id), data: depsData({ pending }) });
    for (const k of mine.kids)
      ops.push({ op: 'create', path: js.layout.depEntry(r.id, k.kind, k.child), data: k.data });
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
 * children at the version read, their entries (an existing child already
 * among them is left as it is), and a check that the parent is where it
 * was read. Throws MissingParentError when it does not exist.
 */
async function existingParentShare(store: QueueStore, sh: ParentShare): Promise<Built> {
  const { link } = sh;
  const read = await readParent(store, link);
  if (!read.parent) throw new MissingParentError(childKey(link));
  const ps = read.store;
  const kinds: DepKind[] = ['u', 'p', 'i', 'f'];
  const present = await store.session.readMulti(
    sh.kids.flatMap((k) =>
      kinds.map((kind) => ({ op: 'getChildren' as const, path: ps.layout.depEntry(link.id, kind, k.child) })),
    ),
  );
  const kids = sh.kids.filter((_, n) => !present.slice(n * kinds.length, (n + 1) * kinds.length).some((p) => p.ok));
  if (kids.length === 0) return { ops: [] };
  await ps.ensureDir(ps.layout.depsShard(link.id));
  const node: DepsNode = { ...(read.deps?.node ?? { pending: 0 }) };
  node.pending += kids.filter((k) => k.kind === 'u').length;
  const path = ps.layout.deps(link.id);
  const ops: ProtocolOp[] = [
    read.deps
      ? { op: 'setData', path, data: depsData(node), version: read.deps.version, role: 'reread' }
      : { op: 'create', path, data: depsData(node), role: 'reread' },
    // the parent is still where it was read (a parent released or removed meanwhile is read again)
    { op: 'check', path: ps.layout.job(link.id), version: read.parent.version, role: 'reread' },
    ...kids.map(
      (k): ProtocolOp => ({ op: 'create', path: ps.layout.depEntry(link.id, k.kind, k.child), data: k.data }),
    ),
  ];
  return { ops };
}

/** One flow's outcome: per job when it was added, or what failed it (nothing written then). */
export type FlowResult = { ok: true; outcomes: FlowAdded[] } | { ok: false; error: unknown };

/**
 * Adds flows, each whole in one transaction of its own (see flowUnit): one
 * that fails leaves the others. Resolves with each flow's outcome.
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
    flows.map((jobs, n) => ({ build: () => flowUnit(store, jobs, outcomes[n], existingIds) })),
    { inFlight: 1 },
  );
  return results.map((r, n) =>
    r.ok ? { ok: true, outcomes: outcomes[n] as FlowAdded[] } : { ok: false, error: r.error },
  );
}

/** Adds one flow in one transaction (see flowUnit); throws what failed it, nothing written then. */
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
    tag({ op: 'delete', path: ps.layout.depEntry(link.id, 'u', me) }),
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
  const names = await ps.children(depsPath);
  const ops: ProtocolOp[] = [tag({ op: 'delete', path: ps.layout.job(r.id), version: parent.version })];
  if (r.parked) ops.push(tag({ op: 'delete', path: r.parked }));
  // a node too large for one transaction is left to the leader's sweep of orphans
  if (names.length <= DROP_INLINE) {
    ops.push(tag({ op: 'check', path: depsPath, version: depsVersion }));
    for (const n of names) ops.push(tag({ op: 'delete', path: `${depsPath}/${n}` }));
    ops.push(tag({ op: 'delete', path: depsPath }));
  }
  const events: QueueEventRecord[] = [{ event: 'removed', jobId: r.id, prev: 'waiting-children', ts: Date.now() }];
  return joinBuilt({ ops, events }, await detachOps(ps, r, o));
}

/**
 * Most entries a parent's dependency node may have for it to be deleted
 * inside the change that removes the parent (its finish, its removal); a
 * node with more is left for the leader's sweep, which deletes it in
 * chunks, so the parent's own change always fits one transaction.
 */
export const DROP_INLINE = 200;
/** Entries the sweep deletes per transaction. */
const DROP_CHUNK = 500;

/**
 * The ops that delete a parent's dependency node and its entries (with the
 * parent); none without one, or with more than DROP_INLINE entries (the
 * sweep takes those). They fail if a child changed an entry meanwhile:
 * `reread` for a unit whose build reads again (else the caller plans again).
 */
export async function dropDepsOps(store: QueueStore, id: string, role?: 'reread'): Promise<ProtocolOp[]> {
  const path = store.layout.deps(id);
  const names = await store.children(path);
  if (names.length > DROP_INLINE) return [];
  const stat = names.length > 0 ? true : await store.session.exists(path);
  if (!stat) return [];
  const del = (p: string): ProtocolOp => (role ? { op: 'delete', path: p, role } : { op: 'delete', path: p });
  return [...names.map((n) => del(`${path}/${n}`)), del(path)];
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
  const path = layout.deps(id);
  const names = await store.children(path);
  for (let i = 0; i === 0 || i < names.length; i += DROP_CHUNK) {
    const chunk = names.slice(i, i + DROP_CHUNK);
    const last = i + DROP_CHUNK >= names.length;
    const ops: ProtocolOp[] = [
      { op: 'create', path: layout.job(id), data: EMPTY },
      ...chunk.map((n): ProtocolOp => ({ op: 'delete', path: `${path}/${n}` })),
      ...(last ? [{ op: 'delete', path } as ProtocolOp] : []),
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

/** The names of a parent's dependency entries (none without a node). */
async function entries(store: QueueStore, id: string) {
  const names = await store.children(store.layout.deps(id));
  return names.flatMap((n) => {
    const e = parseDepEntry(n);
    return e ? [{ name: n, ...e }] : [];
  });
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
  const base = store.layout.deps(id);
  for (let i = 0; i < withData.length; i += DEPS_READ) {
    const batch = withData.slice(i, i + DEPS_READ);
    const replies = await store.session.readMulti(
      batch.map((e) => ({ op: 'getData' as const, path: `${base}/${e.name}` })),
    );
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
