/**
 * The one retry policy of the protocol's optimistic writes (the executor's
 * `runPlanned`, and `runPlannedBatch` for several at once): read, plan,
 * write at the versions read; plan again when another writer went first.
 *
 * A plan reads what its write depends on and returns either an answer with
 * no write, or a unit to write and the answer once it is applied. When the
 * unit fails on a conflict (one of its ops met a node changed, created or
 * removed since the read: the error names the op), nothing was applied and
 * the plan runs again from fresh reads, after a random pause that grows with
 * the attempts, so that writers who collided stop colliding. After
 * PLAN_ATTEMPTS plans that all conflicted (`attempts` for a node every
 * client writes), TooManyConflictsError, with the last conflict as its cause.
 *
 * A write whose outcome stays unknown (its reply lost, and no receipt says
 * it committed) is planned again too, from fresh reads, never sent again as
 * it was: a node written at a version read may have been deleted and made
 * again meanwhile (an obliterate, the last settings field removed), back at
 * that version. After UNKNOWN_REPLANS such rounds, OutcomeUnknownError.
 *
 * A caller that reads some failures otherwise (a node that exists means the
 * work was done before; a conflict on a node it does not plan from is a
 * failure) says so with `onFailure`. Any other failure of the write (a
 * fence, an op refused by the ACL, a payload too large) and any error of
 * the plan are thrown as they are.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BadVersionError, NodeExistsError, NoNodeError, NotEmptyError } from '../../zk/errors.js';
import type { ProtocolOp, RunOptions, TxUnit, UnitResult } from './units.js';
import { OutcomeUnknownError, TooManyConflictsError } from './write-errors.js';

/** Plans an optimistic write makes before it gives up with TooManyConflictsError. */
export const PLAN_ATTEMPTS = 32;
/** Rounds planned again after an outcome left unknown before OutcomeUnknownError (the executor's resends). */
export const UNKNOWN_REPLANS = 8;
/** Longest pause before planning again, ms (10 ms times the attempts so far, up to this). */
export const REPLAN_PAUSE_MAX_MS = 200;

/**
 * What a plan made of its reads: `answer` now, or once `unit` (written at the
 * versions read) is applied; `answerOf` reads the answer from the applied
 * unit's results instead (the path a sequential create was given).
 */
export interface Plan<T> {
  answer: T;
  unit?: TxUnit;
  answerOf?: (result: UnitResult & { ok: true }) => T;
}

/** What a failed write means: plan again, resolve with an answer, or fail with the write's error. */
export type FailureVerdict<T> = 'again' | 'fail' | { answer: T };

/** Options of `runPlanned`: how the unit is sent (as `run`'s), and how a failure is read. */
export interface PlannedOptions<T> extends Pick<RunOptions<TxUnit>, 'fence' | 'receipt'> {
  /**
   * Plans before TooManyConflictsError (default PLAN_ATTEMPTS). More only for
   * a node every client writes, where each conflict is another's progress and
   * never a livelock (the ids counter).
   */
  attempts?: number;
  /**
   * Reads a failed write (`op`: the op that failed, when one did); undefined
   * leaves it to the default: a conflict plans again, anything else fails.
   */
  onFailure?: (
    error: unknown,
    op: ProtocolOp | undefined,
  ) => FailureVerdict<T> | undefined | Promise<FailureVerdict<T> | undefined>;
}

/**
 * Whether a failed write conflicted with another writer: one of its ops met
 * a node changed, created or removed since the read (nothing was applied).
 * An op refused for another reason (no permission, say) is no conflict: a
 * new plan would be refused the same way.
 */
export function isWriteConflict(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if ((error as { opIndex?: unknown }).opIndex === undefined) return false;
  return (
    error instanceof BadVersionError ||
    error instanceof NoNodeError ||
    error instanceof NodeExistsError ||
    error instanceof NotEmptyError
  );
}

/**
 * `onFailure` of a write that never brings a deleted queue back (the ids
 * counter, settings, a rate-limit window, a worker's registration): a create
 * whose directory is gone, the queue obliterated, is no conflict to plan
 * again; it fails at once with NoNodeError.
 */
export function failWhenQueueGone(error: unknown, op: ProtocolOp | undefined): 'fail' | undefined {
  return error instanceof NoNodeError && op?.op === 'create' ? 'fail' : undefined;
}

/** Plans a batch: one plan per item still to write, in order (`attempt`: the plans made so far, plus one). */
export type BatchPlan<I, T> = (items: readonly I[], attempt: number) => Promise<Plan<T>[]>;

/** Sends units together, as the executor's `run` does: one result per unit, in order. */
export type SendUnits = (
  units: readonly TxUnit[],
  o: Pick<RunOptions<TxUnit>, 'fence' | 'receipt' | 'resend'>,
) => Promise<UnitResult[]>;

/**
 * `runPlanned` for a batch: `plan` reads for the items still to write and
 * plans one unit each (in the items' order); the units go in one `send` (so
 * as few transactions as fit), and only the items whose write conflicted are
 * planned again, by the same policy. Resolves with one answer per item, in
 * order; the first final failure is thrown.
 */
export async function runPlannedBatch<I, T>(
  send: SendUnits,
  items: readonly I[],
  plan: BatchPlan<I, T>,
  o: PlannedOptions<T> = {},
): Promise<T[]> {
  const answers: T[] = new Array(items.length);
  let pending = items.map((item, index) => ({ item, index }));
  let unknownRounds = 0;
  const limit = o.attempts ?? PLAN_ATTEMPTS;
  for (let attempt = 1; pending.length > 0; attempt++) {
    const plans = await plan(
      pending.map((p) => p.item),
      attempt,
    );
    const writes: { index: number; item: I; planned: Plan<T> }[] = [];
    pending.forEach((p, k) => {
      const planned = plans[k] as Plan<T>;
      if (planned.unit) writes.push({ ...p, planned });
      else answers[p.index] = planned.answer;
    });
    if (writes.length === 0) break;
    const results = await send(
      writes.map((w) => w.planned.unit as TxUnit),
      { fence: o.fence, receipt: o.receipt, resend: false },
    );
    const again: typeof pending = [];
    let conflict: unknown;
    let unknown: unknown;
    for (const [k, w] of writes.entries()) {
      const result = results[k] as UnitResult;
      if (result.ok) {
        answers[w.index] = w.planned.answerOf ? w.planned.answerOf(result) : w.planned.answer;
        continue;
      }
      if (result.error instanceof OutcomeUnknownError) {
        // planned again from fresh reads, never sent again blind (see the header)
        again.push({ item: w.item, index: w.index });
        unknown = result.error;
        continue;
      }
      const verdict =
        (await o.onFailure?.(result.error, result.op)) ?? (isWriteConflict(result.error) ? 'again' : 'fail');
      if (verdict === 'fail') throw result.error;
      if (verdict !== 'again') answers[w.index] = verdict.answer;
      else {
        again.push({ item: w.item, index: w.index });
        conflict = result.error;
      }
    }
    if (unknown !== undefined && ++unknownRounds > UNKNOWN_REPLANS) throw unknown;
    if (again.length > 0 && attempt >= limit) throw new TooManyConflictsError(attempt, conflict ?? unknown);
    pending = again;
    if (pending.length > 0) await sleep(Math.random() * Math.min(REPLAN_PAUSE_MAX_MS, 10 * attempt));
  }
  return answers;
}
