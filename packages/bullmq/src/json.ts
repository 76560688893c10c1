/**
 * A zkq job record as BullMQ's JobJson, and BullMQ's errors for finished
 * operations. zkq records already carry BullMQ's fields; BullMQ wants data,
 * return value and stack trace as JSON strings.
 */
import type { JobState } from '@zkq/core';
import { type JobRecord, parentKeysIn } from '@zkq/core/internal';
import { ErrorCode, type JobJson, UnrecoverableError } from 'bullmq';

/** A stored record in the shape `Job.fromJSON` reads; `prefix` qualifies a parent's key as BullMQ's. */
export function toJobJson(record: JobRecord, prefix: string, progress?: unknown): JobJson {
  const json: JobJson = {
    id: record.id,
    name: record.name,
    data: JSON.stringify(record.data ?? {}),
    opts: record.opts as JobJson['opts'],
    progress: (progress ?? record.progress ?? 0) as JobJson['progress'],
    attemptsMade: record.attemptsMade,
    attemptsStarted: record.attemptsStarted,
    stalledCounter: record.stalledCounter,
    timestamp: record.timestamp,
    delay: record.delay,
    priority: record.priority,
    failedReason: record.failedReason ?? '',
    stacktrace: JSON.stringify(record.stacktrace ?? []),
    returnvalue: JSON.stringify(record.returnvalue ?? null),
  };
  if (record.processedOn) json.processedOn = record.processedOn;
  if (record.finishedOn) json.finishedOn = record.finishedOn;
  if (record.processedBy) json.processedBy = record.processedBy;
  const repeatJobKey = (record.opts as { repeatJobKey?: string }).repeatJobKey;
  if (repeatJobKey) json.repeatJobKey = repeatJobKey;
  const deduplicationId = record.opts.deduplication?.id;
  if (deduplicationId) json.deduplicationId = deduplicationId;
  if (record.deferredFailure) json.deferredFailure = record.deferredFailure;
  if (record.parentLink) Object.assign(json, parentKeysIn(prefix, record.parentLink));
  return json;
}

/** BullMQ's state name for a record's state (zkq says `waiting`, BullMQ `waiting` too, but `prioritized` by lane). */
export function bullState(record: JobRecord, claimed: boolean): JobState {
  if (record.state === 'waiting' && claimed) return 'active';
  if (record.state === 'active') return claimed ? 'active' : 'waiting';
  if (record.state === 'waiting' && (record.priority ?? 0) > 0) return 'prioritized';
  return record.state;
}

/**
 * The Error BullMQ raises for a finished operation that found the job
 * missing, its lock missing or held by another token, or in another state:
 * the same messages and `code`s as BullMQ's own backends, since callers and
 * tests match them.
 */
export function finishedError(code: ErrorCode, jobId: string, command: string, state?: string): Error {
  let message: string;
  switch (code) {
    case ErrorCode.JobNotExist:
      message = `Missing key for job ${jobId}. ${command}`;
      break;
    case ErrorCode.JobLockNotExist:
      message = `Missing lock for job ${jobId}. ${command}`;
      break;
    case ErrorCode.JobNotInState:
      message = `Job ${jobId} is not in the ${state} state. ${command}`;
      break;
    case ErrorCode.JobBelongsToJobScheduler:
      message = `Job ${jobId} belongs to a job scheduler and cannot be removed directly. ${command}`;
      break;
    case ErrorCode.JobLockMismatch:
      message = `Lock mismatch for job ${jobId}. Cmd ${command} from ${state}`;
      break;
    case ErrorCode.JobPendingChildren:
      message = `Job ${jobId} has pending dependencies. ${command}`;
      break;
    case ErrorCode.ParentJobNotExist: // jobId: the parent's key
      message = `Missing key for parent job ${jobId}. ${command}`;
      break;
    case ErrorCode.ParentJobCannotBeReplaced: // jobId: the parent's key
      message = `The parent job ${jobId} cannot be replaced. ${command}`;
      break;
    case ErrorCode.JobHasFailedChildren:
      return Object.assign(
        new UnrecoverableError(`Cannot complete job ${jobId} because it has at least one failed child. ${command}`),
        { code },
      );
    default:
      message = `Unknown code ${code} error for ${jobId}. ${command}`;
  }
  return Object.assign(new Error(message), { code });
}
