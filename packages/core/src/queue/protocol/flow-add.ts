/**
 * Adding flows: each one whole, in one transaction of its own, planned by
 * flow-plan.ts; one too large for a transaction is added in several
 * (flow-add-split.ts). Called by both front-ends' flow producers and by
 * `Queue.add` with a parent.
 */

import { PayloadTooLargeError } from '../errors.js';
import type { ProtocolContext } from './context.js';
import type { Built, ProtocolOp } from './executor.js';
import { addSplitFlow } from './flow-add-split.js';
import { existingParentShare, type ShareMemo } from './flow-existing-parent.js';
import { joinBuilt } from './flow-parent.js';
import { type ExistingIds, type FlowAdded, type FlowJob, type FlowPlan, planFlow } from './flow-plan.js';

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
  store: ProtocolContext,
  jobs: readonly FlowJob[],
  outcomes: FlowAdded[] = [],
  existingIds: ExistingIds = 'join',
): Promise<Built> {
  return buildFlow(store, await planFlow(store, jobs, outcomes, existingIds));
}

/** A planned flow's ops, in one transaction (see flowUnit); `memos` keep each outside parent's reads between builds. */
async function buildFlow(store: ProtocolContext, plan: FlowPlan, memos = new Map<string, ShareMemo>()): Promise<Built> {
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
function flowAddUnit(
  store: ProtocolContext,
  jobs: readonly FlowJob[],
  outcomes: FlowAdded[],
  existingIds: ExistingIds,
) {
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

/** One flow's outcome: per job when it was added, or what failed it (nothing written then). */
export type FlowResult = { ok: true; outcomes: FlowAdded[] } | { ok: false; error: unknown };

/**
 * Adds flows, each whole in one transaction of its own (see flowUnit): one
 * that fails leaves the others. A flow too large for one transaction is
 * added in several (see flow-add-split.ts). Resolves with each flow's outcome.
 */
export async function addFlows(
  store: ProtocolContext,
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
  store: ProtocolContext,
  jobs: readonly FlowJob[],
  existingIds: ExistingIds = 'join',
): Promise<FlowAdded[]> {
  const [result] = await addFlows(store, [jobs], existingIds);
  if (!result?.ok) throw result?.error;
  return result.outcomes;
}
