/**
 * The waits behind `QueueEvents.waitJobFinished` (`job.waitUntilFinished`).
 *
 * A wait settles from the job's `completed` or `failed` event, which carry
 * the return value and the failure reason, so it works when the record is
 * deleted as the job finishes (`removeOnComplete`). One read of the record
 * settles a job that finished before the wait began. A record that is gone
 * means either an unknown id or a job removed as it finished: the follower
 * first delivers every event logged up to then (the finish that deleted the
 * record logged its event in the same transaction), and if none was this
 * job's, the wait rejects with JobNotFoundError.
 *
 * Nothing polls: the only timer is the caller's `ttl`, cleared when the wait
 * settles, and closing the QueueEvents rejects every wait with ClosedError.
 */
import { JobNotFoundError, TimeoutError } from '@zkq/core';
import type { QueueStore } from '@zkq/core/internal';
import type { QueueEvents } from './queue-events.js';

type Settle = (outcome: { value: unknown } | { error: Error }) => void;

export class FinishedWaiters {
  private readonly pending = new Set<Settle>();

  constructor(
    private readonly events: QueueEvents,
    /** Resolves once every event logged before the call has been delivered. */
    private readonly catchUp: () => Promise<void>,
  ) {}

  /** Rejects every pending wait with `error`. */
  closeAll(error: Error): void {
    for (const settle of [...this.pending]) settle({ error });
  }

  wait(store: QueueStore, jobId: string, ttl: number | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      /** An event of this job's end was delivered (its value may still be read). */
      let ended = false;
      const settle: Settle = (outcome) => {
        if (!this.pending.delete(settle)) return;
        clearTimeout(timer);
        this.events.off('completed', onCompleted);
        this.events.off('failed', onFailed);
        this.events.off('removed', onRemoved);
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.value);
      };
      const onCompleted = ({ jobId: id, returnvalue }: { jobId: string; returnvalue: unknown }) => {
        if (id !== jobId) return;
        ended = true;
        if (!isTruncated(returnvalue)) settle({ value: returnvalue });
        else void storedValue(store, jobId, returnvalue).then((value) => settle({ value }));
      };
      const onFailed = ({ jobId: id, failedReason }: { jobId: string; failedReason: string }) => {
        if (id !== jobId) return;
        ended = true;
        settle({ error: new Error(failedReason) });
      };
      const onRemoved = ({ jobId: id }: { jobId: string }) => {
        if (id === jobId && !ended) settle({ error: new JobNotFoundError(jobId) });
      };
      this.pending.add(settle);
      this.events.on('completed', onCompleted);
      this.events.on('failed', onFailed);
      this.events.on('removed', onRemoved);
      if (ttl !== undefined) {
        timer = setTimeout(() => settle({ error: new TimeoutError(`waiting for job ${jobId}`, ttl) }), ttl);
      }
      void this.settleFromRecord(store, jobId, settle, () => ended);
    });
  }

  /** Settles a job that finished before the wait began; a job gone for good is unknown. */
  private async settleFromRecord(store: QueueStore, jobId: string, settle: Settle, ended: () => boolean) {
    try {
      const [stored, claim] = await Promise.all([store.getJob(jobId), store.getClaim(jobId)]);
      if (stored) {
        const { record } = stored;
        if (claim) return; // running (again): its events will come
        if (record.state === 'completed') settle({ value: record.returnvalue });
        else if (record.state === 'failed') settle({ error: new Error(record.failedReason ?? 'failed') });
        return;
      }
      await this.catchUp();
      if (!ended()) settle({ error: new JobNotFoundError(jobId) });
    } catch (err) {
      settle({ error: err instanceof Error ? err : new Error(String(err)) });
    }
  }
}

/** The `{ truncated, bytes }` marker an event carries instead of a value too large for it. */
function isTruncated(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { truncated?: unknown; bytes?: unknown };
  return v.truncated === true && typeof v.bytes === 'number' && Object.keys(v).length === 2;
}

/** The stored return value; the event's marker when the record is gone (removed on completion). */
async function storedValue(store: QueueStore, jobId: string, fallback: unknown): Promise<unknown> {
  const stored = await store.getJob(jobId).catch(() => undefined);
  return stored?.record.state === 'completed' ? stored.record.returnvalue : fallback;
}
