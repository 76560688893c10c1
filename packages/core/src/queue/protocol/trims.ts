/**
 * Retention inside the finish: a finish that sends its job to a finished set
 * bounded by a count (`removeOnComplete` / `removeOnFail` count, or the
 * default keep) deletes the oldest pointers beyond the bound, with their
 * records, in its own transaction, so the bound holds the moment it commits
 * (BullMQ trims inside its moveToFinished too).
 *
 * The data version of a set's node (`completed`, `failed`) counts the
 * pointers added there without a trim beside them. A finish plans from its
 * store's view of the set (trim-view.ts), reading nothing in the common case:
 *
 * - below the bound, its pointer is added alone and the node rewritten at
 *   the version the count was read at (`grow`): such adds are serialized by
 *   that version, so two workers never both take the last free place;
 * - at the bound, it deletes as many of the oldest as it adds (more while
 *   the set is over its bound): a balanced finish changes no count, so it
 *   checks the version (`check`) without moving it, and those of many
 *   workers commit side by side. Every one checks: a finish may be sent
 *   without the others of its batch (they failed, or did not fit its multi),
 *   and a change since the view was read (an add without a bound, a
 *   removal) must still be noticed;
 * - without a count bound, the node is rewritten whatever it is (`touch`),
 *   so that bounded writers read the count again.
 *
 * A stale view never deletes the wrong job nor fails the finish: a trim
 * deletes the pointer (a job retried or removed since has lost it, in the
 * transaction that changed its record) and then the record, ops of role
 * `trim`; when one fails, the executor plans every trimming unit of that
 * multi again, and the view is read anew. A finish whose plan counted in
 * others' (a grow, a trim) and that fails for good takes their plans with
 * it: the executor plans them again. After MAX_PLANS plans a finish
 * goes without its trim (`later`: the caller asks the Trimmer to catch up).
 *
 * A plan decides from the view's count when it is built; the version its
 * check or grow names is bound as its multi is sent (`sending`), in the
 * order this store's multis reach ZooKeeper, so finish batches planned side
 * by side (the Finisher's, or a unit built again after a conflict) never
 * hold versions in another order than they are applied in.
 *
 * Flows: a failed job that may still be a pending child (no failure policy
 * toward its parent) leaves its parent's dependencies as it is trimmed
 * (`detachOps`; the last one releases the parent), as BullMQ's removeJob
 * does. A completed child, or a failed one that settled, leaves its entry
 * (a processed child's value stays readable from its parent).
 */
import type { JobRecord } from '../record.js';
import type { KeepJobs } from '../types.js';
import { type FillWrite, fillOp, trimOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { Built, ProtocolOp, UnitResult } from './executor.js';
import { detachOps } from './flow-detach.js';
import { joinBuilt } from './flow-parent.js';
import { type Entry, type Plan, type SetKind, type SetView, type TrimBatch, viewOf } from './trim-view.js';

export { prepareViews as prepareTrims, TrimBatch } from './trim-view.js';

/** Plans of one finish after which it goes without its trim (a unit may be planned again this often). */
export const MAX_PLANS = 200;
/** Pointers beyond its own that one finish trims while the set is over its bound. */
const MAX_EXCESS = 20;

/** A finish's retention across its plans (the same finish may be planned again). */
export interface TrimState {
  plans: number;
  plan?: Plan;
  /** Index, in the unit's ops, of the create of the finish's own pointer (its result names it). */
  createAt?: number;
  /** The finished job's record when it is a child still pending for its parent (a failed one), else 'plain'. */
  createdRead?: JobRecord | 'plain';
  /** The bound was not enforced by the transaction that committed: trim later. */
  later?: boolean;
}

/**
 * The retention share of a finish that adds one pointer to set `kind`:
 * with `keep.count`, the trims and the check or grow of the set's version;
 * without, a touch. Never throws: a plan that cannot be made goes without
 * its trim (`state.later`).
 */
export async function trimShare(
  store: ProtocolContext,
  batch: TrimBatch,
  state: TrimState,
  kind: SetKind,
  keep: KeepJobs | undefined,
): Promise<Built> {
  state.plans++;
  state.later = undefined;
  const bound = keep?.count;
  if (bound === undefined) return { ops: [fillOp(store.layout, kind, { kind: 'touch' })] };
  if (state.plans <= MAX_PLANS) {
    try {
      return await plan(viewOf(store, kind), batch, state, bound);
    } catch {
      // the view could not be read: this finish goes without its trim
    }
  }
  state.later = true;
  return { ops: [fillOp(store.layout, kind, { kind: 'touch' })] };
}

/** Reads of the view one plan makes when no pointer is free, before it goes without a victim. */
const EMPTY_READS = 3;

async function plan(view: SetView, batch: TrimBatch, state: TrimState, bound: number): Promise<Built> {
  let emptyReads = 0;
  for (;;) {
    if (view.unknown) {
      await view.refresh();
      continue;
    }
    if (view.old) view.refreshSoon();
    const need = view.count + 1 - bound;
    if (need <= 0) return record(view, batch, state, [], { kind: 'grow', version: view.version });
    const gen = view.gen;
    let victims = await view.pointers.take(Math.min(need, 1 + MAX_EXCESS), batch);
    if (view.gen !== gen) {
      // read again meanwhile: the count the victims were chosen for may have changed
      view.pointers.giveBack(victims, batch);
      continue;
    }
    if (victims.length === 0) {
      // every pointer is taken by a plan in flight: once older batches settle, a read shows what they added
      if (await view.waitOlder(batch, true)) {
        view.stale = true;
        continue;
      }
      victims = view.pointers.steal(batch, view.plans);
      if (victims.length === 0 && emptyReads++ < EMPTY_READS) {
        view.stale = true;
        continue;
      }
    }
    const built = record(view, batch, state, victims, { kind: 'check', version: view.version });
    if (view.count > bound) state.later = true;
    const children = victims.filter((v) => typeof v.read === 'object');
    if (children.length === 0) return built;
    return joinBuilt(built, ...(await Promise.all(children.map((v) => detachShare(view.store, v)))));
  }
}

/** Counts a plan into the view and returns its ops: the version's check or grow, the victims' trims. */
function record(view: SetView, batch: TrimBatch, state: TrimState, victims: Entry[], fill: FillWrite): Built {
  const grows = fill.kind === 'grow';
  const p: Plan = { view, batch, victims, grows, sent: false, gen: view.gen, delta: 1 - victims.length };
  view.plans.add(p);
  view.count += p.delta;
  state.plan = p;
  const { layout } = view.store;
  p.fill = fillOp(layout, view.kind, fill);
  const ops: ProtocolOp[] = [p.fill];
  for (const v of victims) {
    if (v.orphan) ops.push({ op: 'delete', path: v.pointer, role: 'trim' });
    else for (const op of trimOps(layout, v)) ops.push({ ...op, role: 'trim' });
  }
  return { ops };
}

/** A victim that may be pending for its parent leaves the parent's dependencies (ops of role `trim`, or `into`). */
async function detachShare(store: ProtocolContext, v: Entry): Promise<Built | undefined> {
  if (typeof v.read !== 'object') return undefined;
  const built = await detachOps(store, v.read);
  if (!built) return undefined;
  return { ...built, ops: built.ops.map((op): ProtocolOp => (op.role === 'into' ? op : { ...op, role: 'trim' })) };
}

/** Takes a plan that will not be applied out of its view. */
function unplan(p: Plan): void {
  const { view } = p;
  view.plans.delete(p);
  view.count -= p.delta;
  // sent, its outcome unknown: whether the version moved is read again
  if (p.sent && p.grows) view.stale = true;
}

/** The finish's multi is being sent: its check or grow names the version this store's multis have reached. */
export function sendingTrim(state: TrimState): void {
  const p = state.plan;
  if (!p || p.sent) return;
  p.sent = true;
  if (p.fill) p.fill.version = p.view.version;
  if (p.grows) p.view.version++;
}

/** The finish's multi failed on an op: it was not applied, its grow did not move the version. */
export function unsentTrim(state: TrimState): void {
  const p = state.plan;
  if (!p?.sent) return;
  p.sent = false;
  if (p.grows) p.view.version--;
}

/**
 * The finish's last plan will not be sent (its unit is built again, or
 * replaced) because `failed` failed: undo it. A failed `trim` op means the
 * view was stale: it is read again, and a pointer found gone is forgotten.
 */
export function dropTrim(state: TrimState, failed: ProtocolOp): void {
  const p = state.plan;
  if (!p) return;
  state.plan = undefined;
  const { view } = p;
  unplan(p);
  if (failed.role === 'trim') {
    // another store trimmed (or removed) a pointer this one planned to trim
    if (failed.op === 'delete' && failed.path.startsWith(`${view.dir}/`)) view.pointers.collided(failed.path);
    if (p.gen === view.gen) view.stale = true;
  }
  const { layout } = view.store;
  for (const v of p.victims) if (failed.path === layout.job(v.id)) v.orphan = true; // its record is gone
  view.pointers.release(
    p.victims.filter((v) => v.pointer === failed.path),
    p.batch,
  );
  view.pointers.giveBack(
    p.victims.filter((v) => v.pointer !== failed.path),
    p.batch,
  );
  view.notify();
}

/** The finish's last plan was applied, or failed for good. */
export function settleTrim(state: TrimState, result: UnitResult): void {
  const p = state.plan;
  if (!p) return;
  state.plan = undefined;
  const { view } = p;
  view.plans.delete(p);
  view.pointers.release(p.victims, p.batch);
  if (result.ok) {
    // the pointer the finish created in this set, when its result is known
    const created = state.createAt === undefined ? undefined : result.results?.[state.createAt];
    view.pointers.applied(p.victims, created?.op === 'create' ? created.path : undefined, state.createdRead);
  } else {
    // its count is not what the view holds, and its victims are still there
    view.count -= p.delta;
    if (p.sent && p.grows) view.version--;
    view.stale = true;
  }
  view.notify();
}
