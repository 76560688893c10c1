/**
 * A flow planned before it is written: which of its jobs exist (BullMQ's
 * duplicated id), each job's own share (record, pointer, dependency node
 * and buckets) and the shares of parents outside the flow. A flow naming
 * a job that exists already gives it the flow's parent in the same
 * transaction: its record written at the version read, unless it runs (its
 * record is then its attempt's token). Written by flow-add.ts, or in
 * several transactions by flow-add-split.ts.
 */

import { NoNodeError } from '../../zk/errors.js';
import { JobExistsError, JobStateError, MissingParentError } from '../errors.js';
import type { QueueEventRecord } from '../events.js';
import type { ChildKey } from '../layout.js';
import { encodeRecord, type JobRecord, type ParentLink } from '../record.js';
import { type Place, parkedPath, pointerOp } from './builders.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { depsTree, readPaged } from './deps-entries.js';
import type { Built, ProtocolOp } from './executor.js';
import { bucketsOf, childKey, depsData, joinBuilt, share } from './flow-parent.js';
import { DROP_INLINE, sweepOne } from './flow-sweep.js';

const EMPTY = Buffer.alloc(0);

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
  stores: ProtocolContext[],
  jobs: readonly FlowJob[],
): Promise<{ found: (StoredJob | undefined)[]; stale: (string[] | undefined)[] }> {
  const store = stores[0] as ProtocolContext;
  const at = (i: number) => (stores[i] as ProtocolContext).layout;
  const reads = jobs.flatMap((j, i) => [
    { op: 'getChildren' as const, path: at(i).job(j.record.id) },
    { op: 'getData' as const, path: at(i).deps(j.record.id) },
  ]);
  const listed = await readPaged(store.session, reads);
  const failed = listed.find((r) => !r.ok && !(r.error instanceof NoNodeError));
  if (failed && !failed.ok) throw failed.error;
  const found = await Promise.all(
    jobs.map((j, i) => (listed[2 * i]?.ok ? (stores[i] as ProtocolContext).getJob(j.record.id) : undefined)),
  );
  const stale = await Promise.all(
    jobs.map(async (j, i) => {
      if (!listed[2 * i + 1]?.ok) return undefined;
      const js = stores[i] as ProtocolContext;
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
  /** The jobs the flow creates that wait for children in it (a split add holds them: see flow-add-split.ts). */
  held: ChildKey[];
}

/**
 * Plans a flow (see flowUnit). Fills `outcomes` per job. Throws
 * MissingParentError on a cycle, JobExistsError for a taken id (`refuse`),
 * JobStateError when an existing job to give a parent is running.
 */
export async function planFlow(
  store: ProtocolContext,
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
    const js = stores[i] as ProtocolContext;
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
    const js = stores[i] as ProtocolContext;
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
 * What an existing job named in a flow under `link` becomes: given that
 * parent when it has none or that one (its record rewritten, unless it has
 * that very link), left alone under another live parent (refused) or a
 * parent since gone. Throws JobStateError while it runs.
 */
async function attachExisting(
  js: ProtocolContext,
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
 * in the flow, its dependency node and the buckets their entries go in
 * (each child's share creates its entry). It parks in waiting-children
 * while one is pending, counted from the start; with none (each one an
 * existing completed job) it is released at once, as a child's finish would.
 */
async function createdShare(
  store: ProtocolContext,
  js: ProtocolContext,
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
