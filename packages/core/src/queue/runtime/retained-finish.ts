/**
 * A finish with its retention, as both front-ends write it (zkq's Worker,
 * the BullMQ backend): a completed or failed job is deleted by its finish
 * (removeOnComplete / removeOnFail `true`), or kept within the bounds of
 * its finished set. The finish keeps a count bound in its own transaction
 * (protocol/trims.ts); what it leaves (an age bound, or a count it could
 * not keep) goes to the Trimmer, which batches the work.
 */
import type { FinishResult } from '../protocol/finish.js';
import type { Finish } from '../protocol/finish-plan.js';
import { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, keepPolicy, trimAfterFinish } from '../retention.js';
import type { KeepJobs } from '../types.js';

/** The finished sets a job may be kept in. */
export type FinishedKind = 'completed' | 'failed';

/** What a finished set keeps of a job: the set's bounds, or `remove` (the finish deletes the job). */
export type Retention = KeepJobs | 'remove';

/** removeOnComplete / removeOnFail as a job, queue or worker gives it. */
export type RetentionOption = boolean | number | KeepJobs | undefined;

/** The retention an option means for `kind`; zkq's default bounds when none is given. */
export function retentionOf(kind: FinishedKind, option: RetentionOption): Retention {
  return keepPolicy(option, kind === 'completed' ? DEFAULT_KEEP_COMPLETED : DEFAULT_KEEP_FAILED);
}

/** What a retained finish needs from its front-end. */
export interface RetainedFinish {
  /** The job's retention in each finished set (its option, else its front-end's, else zkq's). */
  retention(kind: FinishedKind): Retention;
  /** Writes the finish (the Finisher's batch, traced or counted as the front-end does). */
  write(f: Finish): Promise<FinishResult>;
  /** Hands the Trimmer what the finish left of a set's bounds. */
  trim(kind: FinishedKind, keep: KeepJobs): void;
  /**
   * Whether the job has dependencies its claimed record does not name
   * (children given while it ran, see given-deps.ts); asked only when the
   * finish deletes the job, which then takes them along. A boolean when
   * known at once (no wait before the write).
   */
  hasDeps?(): boolean | Promise<boolean>;
}

/**
 * Writes `f` with its retention: a completion or a failure deletes its job
 * or carries the bounds of its set, whatever its outcome's `remove` said
 * (a retry or a park carries none). Once
 * written, what is left of the bounds of the set the job went to (the
 * outcome asked for, or the failure written in its place when it was too
 * large) is handed to `trim`. A job deleted by its finish takes its
 * dependencies along, those given while it ran too (`hasDeps`).
 */
export async function finishRetained(f: Finish, glue: RetainedFinish): Promise<FinishResult> {
  const o = f.outcome;
  let finish = f;
  if (o.kind === 'completed' || o.kind === 'failed') {
    const retention = glue.retention(o.kind);
    finish = { ...f, outcome: { ...o, remove: retention === 'remove' } };
    if (retention !== 'remove') finish.keep = retention;
    else {
      delete finish.keep;
      const { record } = f.job;
      // a failure to read them does not keep the finish from being written: they are left to the leader's sweep
      const asked = !record.hasDeps && askedDeps(glue);
      const given = asked instanceof Promise ? await asked : asked;
      if (given) finish.job = { ...f.job, record: { ...record, hasDeps: true } };
    }
  }
  const result = await glue.write(finish);
  if (!result.ok) return result;
  const written = result.replaced ?? finish.outcome;
  if ((written.kind === 'completed' || written.kind === 'failed') && !written.remove) {
    const retention = glue.retention(written.kind);
    const rest = retention === 'remove' ? undefined : trimAfterFinish(retention, result.trimLater);
    if (rest) glue.trim(written.kind, rest);
  }
  return result;
}

/** `glue.hasDeps`, false when it fails; a promise only when its answer is one. */
function askedDeps(glue: RetainedFinish): boolean | Promise<boolean> {
  let asked: boolean | Promise<boolean> | undefined;
  try {
    asked = glue.hasDeps?.();
  } catch {
    return false;
  }
  return asked instanceof Promise ? asked.catch(() => false) : asked === true;
}
