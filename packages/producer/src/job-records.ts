/**
 * From what an app passes to `add`, `addBulk` or a FlowProducer to the jobs
 * to build: validation (once, here), the queue's default options, and a
 * child's link to its parent. The records themselves are built by core's
 * buildRecords, which the BullMQ backend uses too.
 */
import { type DefaultJobOptions, InvalidArgumentError, type JobsOptions, PayloadTooLargeError } from '@zkq/core';
import {
  assertJsonFaithful,
  linkTo,
  type ParentLink,
  parentQueueName,
  validateJobName,
  validateJobOptions,
  validatePrefix,
} from '@zkq/core/internal';

export { buildRecords, type JobToBuild, linkTo } from '@zkq/core/internal';

/** A job as validated, its options merged with its queue's defaults. */
export interface PreparedJob {
  name: string;
  data: unknown;
  opts: JobsOptions;
}

/**
 * Validates one job (`where` names it in errors, e.g. `jobs[3]`) and merges
 * `defaults` under its options. Throws InvalidArgumentError (or a subclass:
 * InvalidJobDataError, PayloadTooLargeError) for the first problem.
 */
export function prepareJob(job: unknown, defaults: DefaultJobOptions | undefined, where: string): PreparedJob {
  if (!job || typeof job !== 'object') throw new InvalidArgumentError(`${where} must be { name, data, opts }`, where);
  const j = job as { name: unknown; data: unknown; opts?: unknown };
  validateJobName(j.name);
  validateJobOptions(j.opts);
  const opts: JobsOptions = { ...defaults, ...j.opts };
  assertJsonFaithful(j.data);
  if (opts.sizeLimit !== undefined) {
    const bytes = Buffer.byteLength(JSON.stringify(j.data ?? null));
    if (bytes > opts.sizeLimit) throw new PayloadTooLargeError(bytes, opts.sizeLimit, 'job data');
  }
  return { name: j.name, data: j.data, opts };
}

/**
 * The link of a job added with `opts.parent` (its queue by name or as
 * `<prefix>:<queue>`); none without. Throws InvalidArgumentError when the
 * qualified name is of another namespace than `prefix`: a flow lives in one,
 * and the same id in the same-named queue here is another job.
 */
export function parentLinkOf(opts: JobsOptions, prefix: string): ParentLink | undefined {
  const parent = opts.parent;
  if (!parent) return undefined;
  const at = parent.queue.lastIndexOf(':');
  if (at >= 0 && !samePrefix(parent.queue.slice(0, at), prefix)) {
    throw new InvalidArgumentError(
      `opts.parent.queue '${parent.queue}' is in another namespace than '${validatePrefix(prefix).slice(1)}': a flow lives in one`,
      'opts.parent.queue',
    );
  }
  return linkTo({ queue: parentQueueName(parent.queue), id: parent.id }, opts);
}

function samePrefix(given: string, prefix: string): boolean {
  try {
    return validatePrefix(given) === validatePrefix(prefix);
  } catch {
    return false; // not a namespace at all
  }
}
