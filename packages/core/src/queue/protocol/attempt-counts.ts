/**
 * What an attempt counts without a claim's write: a claim takes its token
 * from the ready pointer's version and writes no record, so the attempts a
 * job started and the stalls it had are told by that version against the
 * claims of the pointer its record has counted (`record.counted`). Pure.
 * Used by the claim (claim.ts), the revocation (stale.ts) and the reads of a
 * claimed job (`getJob`, flow-parent.ts).
 */
import type { JobRecord } from '../record.js';
import type { ClaimInfo } from './context.js';

/**
 * A string naming one attempt, never repeated for any attempt of any job of
 * the queue: the token (its ready pointer's version) with that pointer's
 * czxid, since a job's next pointer counts its versions from 0 again, and
 * its place (lane, bucket, sequence, from its name), since pointers created
 * in one transaction (jobs added together) share a czxid; no two of them
 * share a place. Nothing is read for it. The Job's `token`.
 */
export function attemptKey(job: { token: number; pointerCzxid: number; pointer: string }): string {
  return `${job.pointerCzxid.toString(36)}.${placeOf(job.pointer)}.${job.token}`;
}

/** A ready pointer's lane, bucket and sequence (`…/<lane>/b-<n>/qn-<id>-<seq>`), short: `p0.b0.5`. */
function placeOf(pointer: string): string {
  const [lane = '', bucket = '', name = ''] = pointer.split('/').slice(-3);
  return [lane, bucket, name.slice(name.lastIndexOf('-') + 1)].map(short).join('.');
}

/** A name part without dashes, its runs of digits in base 36. */
function short(part: string): string {
  return part.replaceAll('-', '').replace(/\d+/g, (digits) => Number.parseInt(digits, 10).toString(36));
}

/**
 * How many attempts of a job ended without a finish or a revocation before
 * the claim that got `token` on `pointer` (their workers died): the claims
 * of that pointer the record has not counted.
 */
export function diedBefore(record: JobRecord, pointer: string, token: number): number {
  const counted = record.counted?.pointer === pointer ? record.counted.token : 0;
  return Math.max(0, token - 1 - counted);
}

/** The record as the attempt holding `token` on `pointer` sees it: active, its counts brought up to date. */
export function attemptRecord(
  record: JobRecord,
  a: { pointer: string; token: number; at: number; worker: string },
): JobRecord {
  const died = diedBefore(record, a.pointer, a.token);
  return {
    ...record,
    state: 'active',
    stalledCounter: record.stalledCounter + died,
    attemptsStarted: record.attemptsStarted + died + 1,
    processedOn: a.at,
    processedBy: a.worker,
    counted: { pointer: a.pointer, token: a.token },
  };
}

/**
 * A waiting record as seen while its claim node (`claim`, its data) is
 * there: active, started when and by whom the claim says, its attempt
 * counted. Attempts that died before it (stalls) are not: they are told by
 * the pointer's version, and the pointer's path is in the claim's data, so
 * a read of a running job would need a second round trip for them. The
 * attempt counts them in its own record, written at its finish.
 */
export function claimedView(record: JobRecord, claim: Buffer): JobRecord {
  let info: Partial<ClaimInfo> = {};
  try {
    info = JSON.parse(claim.toString()) as Partial<ClaimInfo>;
  } catch {
    // not a claim zkq wrote: active all the same
  }
  const view: JobRecord = { ...record, state: 'active', attemptsStarted: record.attemptsStarted + 1 };
  if (typeof info.at === 'number') view.processedOn = info.at;
  if (typeof info.worker === 'string') view.processedBy = info.worker;
  return view;
}
