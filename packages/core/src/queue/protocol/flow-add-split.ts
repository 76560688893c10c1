/**
 * A flow too large for one transaction (past ~1,400 children of short
 * names), added in several.
 *
 * Every job's share is built first, so a job too large for any transaction
 * refuses the flow (PayloadTooLargeError) before anything is written. The
 * shares are then written in the flow's order, parents before their
 * children, packed into transactions under the packet budget:
 *
 * - a parent created by the flow is written with its dependency node counting
 *   **every** child it gets in the flow as pending, before any of them
 *   exists; each child's share creates its own entry. A child finishing
 *   before its siblings are written counts down, but the count reaches 0
 *   only once every child was written and has finished: no parent runs early;
 * - a child of a parent outside the flow (`opts.parent`) is written in the
 *   same transaction as its entry there and the count it adds, in chunks of
 *   OUTSIDE_CHUNK: each committed child is counted, none is counted before
 *   it exists;
 * - a mark `deps-adds/a-<random>` in the first job's queue, created in the
 *   first transaction and rewritten by each, lists the parents the flow
 *   holds; the last transaction deletes it. An add cut off by a crash or a
 *   failure leaves the mark: the flow's parents then wait for children that
 *   will never come. The housekeeping leader fails them (see
 *   `releaseCutFlows`): each is moved out of waiting-children with a
 *   deferred failure, so it fails at its next claim without running, and
 *   the children that were written finish as children of a failed parent.
 */
import { randomBytes } from 'node:crypto';
import { NoNodeError } from '../../zk/errors.js';
import { opBytes } from '../../zk/session.js';
import { PayloadTooLargeError } from '../errors.js';
import type { ChildKey } from '../layout.js';
import type { ProtocolContext } from './context.js';
import { type Built, type ProtocolOp, TX_BYTE_BUDGET, type TxUnit } from './executor.js';
import { existingParentShare, type ShareMemo } from './flow-existing-parent.js';
import { childKey, joinBuilt } from './flow-parent.js';
import { type ExistingIds, type FlowAdded, type FlowJob, type ParentShare, planFlow } from './flow-plan.js';
import { failHeldParentOps } from './flow-settle.js';

/** Children of a parent outside the flow written (and counted in) per transaction. */
const OUTSIDE_CHUNK = 500;

/** What a mark of a split add holds: the parents it parks, which a cut-off add leaves waiting. */
export interface FlowAddMark {
  held: ChildKey[];
}

/**
 * Adds a flow in several transactions (see the header). Resolves with each
 * job's outcome; throws PayloadTooLargeError, before anything is written,
 * when one job's share cannot fit any transaction, and what failed a
 * transaction otherwise (the mark then stays for the leader).
 */
export async function addSplitFlow(
  store: ProtocolContext,
  jobs: readonly FlowJob[],
  existingIds: ExistingIds,
): Promise<FlowAdded[]> {
  const outcomes: FlowAdded[] = [];
  const plan = await planFlow(store, jobs, outcomes, existingIds);
  const { session } = store;
  const anchor = store.sibling((jobs[0] as FlowJob).queue);
  const mark = plan.held.length > 0 ? anchor.layout.flowAdd(`a-${randomBytes(8).toString('hex')}`) : undefined;
  const markData = Buffer.from(JSON.stringify({ held: plan.held } satisfies FlowAddMark));
  const touch: ProtocolOp[] = mark ? [{ op: 'setData', path: mark, data: markData }] : [];
  // sizes first: nothing is written for a flow one of whose jobs fits no transaction
  for (const [i, part] of plan.parts.entries()) {
    const built = await part();
    const bytes = [...built.ops, ...touch].reduce((n, op) => n + opBytes(op, session.namespace), 0);
    if (bytes > TX_BYTE_BUDGET) {
      throw new PayloadTooLargeError(
        bytes,
        TX_BYTE_BUDGET,
        `flow job ${childKey({ queue: (jobs[i] as FlowJob).queue, id: (jobs[i] as FlowJob).record.id })}'s share of a transaction`,
      );
    }
  }
  const units: TxUnit[] = [];
  const pending = new Map<string, number[]>();
  const flushOutside = (key: string) => {
    const at = pending.get(key) ?? [];
    pending.delete(key);
    if (at.length === 0) return;
    const sh = plan.parents.get(key) as ParentShare;
    const mine = new Set(
      at.map((i) => childKey({ queue: (jobs[i] as FlowJob).queue, id: (jobs[i] as FlowJob).record.id })),
    );
    const part: ParentShare = { link: sh.link, kids: sh.kids.filter((k) => mine.has(childKey(k.child))) };
    const memo: ShareMemo = {};
    units.push({
      build: async () => {
        const built: Built[] = [];
        for (const i of at) built.push(await (plan.parts[i] as () => Promise<Built>)());
        return joinBuilt(...built, await existingParentShare(store, part, memo), { ops: touch });
      },
    });
  };
  // which batch of children of an outside parent each job waits in (its own children come after it)
  const batchOf = new Map<string, string>();
  for (const [i, part] of plan.parts.entries()) {
    const key = plan.outside[i];
    const link = (jobs[i] as FlowJob).record.parentLink;
    const above = link && batchOf.get(childKey(link));
    if (above !== undefined && pending.has(above)) flushOutside(above);
    if (key !== undefined)
      batchOf.set(childKey({ queue: (jobs[i] as FlowJob).queue, id: (jobs[i] as FlowJob).record.id }), key);
    if (key === undefined) {
      units.push({ build: async () => joinBuilt(await part(), { ops: touch }) });
      continue;
    }
    const at = pending.get(key) ?? [];
    pending.set(key, [...at, i]);
    if (at.length + 1 >= OUTSIDE_CHUNK) flushOutside(key);
  }
  for (const key of [...pending.keys()]) flushOutside(key);
  if (mark) {
    await anchor.ensureDir(anchor.layout.flowAddsDir);
    const first = units[0] as TxUnit;
    units[0] = {
      build: async () => {
        const built = await first.build();
        // created first, so the touch of the same share rewrites it
        return { ...built, ops: [{ op: 'create', path: mark, data: markData }, ...built.ops] };
      },
    };
    // deleted with the last children written: an adder dying after them leaves no mark to judge
    const lastAt = units.length - 1;
    const last = units[lastAt] as TxUnit;
    units[lastAt] = {
      build: async () => {
        const built = await last.build();
        const ops = built.ops.filter((op) => !(op.op === 'setData' && op.path === mark));
        return { ...built, ops: [...ops, { op: 'delete', path: mark }] };
      },
    };
  }
  const results = await store.executor.run(units, { inFlight: 1 });
  const failed = results.find((r) => !r.ok);
  if (failed && !failed.ok) {
    // what was written stays; the held parents fail now (else the leader does, once the mark is stale)
    if (mark) await failHeld(store, mark, plan.held, () => []).catch(() => undefined);
    throw failed.error;
  }
  return outcomes;
}

/**
 * How long a mark may stay unchanged, on the leader's own clock, before its
 * add counts as cut off (a live add rewrites it with every transaction).
 */
export const FLOW_ADD_STALE_MS = 120_000;

/** The reason a parent of a cut-off flow add fails with. */
export const CUT_FLOW_REASON = 'its flow was not fully added (the add was cut off): some children were never written';

/** Per mark: its data version and when the leader first saw it at that version (performance.now()). */
export type MarkSightings = Map<string, { version: number; since: number }>;

/**
 * The leader's tidy-up of cut-off split adds: a mark unchanged for
 * `staleMs` on this process's monotonic clock (never a time written by the
 * adder) has its held parents failed (see failHeldParentOps), then goes.
 * Every write is fenced. Resolves with the marks cleared.
 */
export async function releaseCutFlows(
  store: ProtocolContext,
  fence: () => ProtocolOp[],
  seen: MarkSightings,
  now: number,
  staleMs = FLOW_ADD_STALE_MS,
): Promise<number> {
  const dir = store.layout.flowAddsDir;
  let names: string[];
  try {
    names = await store.session.getChildren(dir);
  } catch (err) {
    if (err instanceof NoNodeError) return 0;
    throw err;
  }
  for (const path of seen.keys()) if (!names.includes(path.slice(dir.length + 1))) seen.delete(path);
  let cleared = 0;
  for (const name of names) {
    const path = `${dir}/${name}`;
    let read: { data: Buffer; stat: { version: number } };
    try {
      read = await store.session.getData(path);
    } catch (err) {
      if (err instanceof NoNodeError) continue;
      throw err;
    }
    const at = seen.get(path);
    if (!at || at.version !== read.stat.version) {
      seen.set(path, { version: read.stat.version, since: now });
      continue;
    }
    if (now - at.since < staleMs) continue;
    const { held } = JSON.parse(read.data.toString()) as FlowAddMark;
    seen.delete(path);
    if (await failHeld(store, path, held, fence, read.stat.version)) cleared++;
  }
  return cleared;
}

/**
 * Fails the parents a cut-off add held (those still waiting for children),
 * then deletes its mark (at `version`, when given: an add that wrote
 * meanwhile is judged again). Resolves whether all of it was written.
 */
async function failHeld(
  store: ProtocolContext,
  mark: string,
  held: readonly ChildKey[],
  fence: () => ProtocolOp[],
  version?: number,
): Promise<boolean> {
  const units: TxUnit[] = held.map((parent) => ({
    build: async () => (await failHeldParentOps(store, parent, CUT_FLOW_REASON)) ?? { ops: [] },
  }));
  const drop: ProtocolOp = version === undefined ? { op: 'delete', path: mark } : { op: 'delete', path: mark, version };
  units.push({ build: () => ({ ops: [drop] }) });
  const results = await store.executor.run(units, { fence, inFlight: 1 });
  return results.every((r) => r.ok);
}
