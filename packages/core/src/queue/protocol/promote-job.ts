/** Promoting delayed jobs by hand (queue control's promoteJob, Job.promote, promoteJobs): waiting now, at the version read. */
import { JobNotFoundError, JobStateError } from '../errors.js';
import type { ProtocolContext } from './context.js';
import { findPointer, positive, readJobs } from './job-reads.js';
import { applyMoves, type Move, promotedRecord, toReady } from './moves.js';
import { waitingEvent } from './retry-job.js';
import { delayedPointers } from './walks.js';

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
    // read back by its receipt: planned again after a lost reply, it found its job waiting and threw JobStateError
    { receipt: true },
  );
}

/** Promotes every delayed job, `count` (default 1000) at a time. Resolves with the number promoted. */
export async function promoteJobs(store: ProtocolContext, opts: { count?: number } = {}): Promise<number> {
  await store.init();
  let moved = 0;
  for await (const chunk of delayedPointers(store, positive(opts.count, 1000))) {
    const moves: Move[] = [];
    for (const j of await readJobs(store, chunk)) {
      if (j.stored?.record.state !== 'delayed') continue;
      const record = promotedRecord(j.stored.record);
      moves.push(toReady(store, j.stored, record, j.pointer, [waitingEvent(j.id, 'delayed')]));
    }
    moved += (await applyMoves(store, moves)).length;
  }
  return moved;
}
