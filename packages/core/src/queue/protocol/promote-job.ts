/** Promoting a delayed job by hand (queue control's promoteJob, Job.promote): waiting now, at the version read. */
import { JobNotFoundError, JobStateError } from '../errors.js';
import type { ProtocolContext } from './context.js';
import { findPointer } from './job-reads.js';
import { promotedRecord, toReady } from './moves.js';
import { waitingEvent } from './retry-job.js';

/**
 * Moves a delayed job to waiting now. Throws JobNotFoundError, or
 * JobStateError when it is not delayed. Event `waiting` {jobId, prev: 'delayed'}.
 */
export async function promoteJob(store: ProtocolContext, id: string): Promise<void> {
  await store.init();
  await store.executor.runPlanned(
    async () => {
      const stored = await store.getJob(id);
      if (!stored) throw new JobNotFoundError(id);
      if (stored.record.state !== 'delayed') {
        throw new JobStateError(id, `is ${stored.record.state}, not delayed: cannot promote it`);
      }
      const pointer = await findPointer(store, stored.record);
      const record = promotedRecord(stored.record);
      return { answer: undefined, unit: toReady(store, stored, record, pointer, [waitingEvent(id, 'delayed')]) };
    },
    { receipt: false },
  );
}
