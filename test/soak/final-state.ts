/**
 * Reads the end state of a soak queue through the public API only:
 * `getJobs` per type lists every job the queue shows (and under which
 * types), `getJob` and `getJobState` read each acknowledged job and each
 * listed one.
 */
import type { Job } from '@zkq/core';
import type { Queue } from '@zkq/producer';
import { dataHash, type EnqueueEvent, type FinalJob } from './history.js';

const ALL_TYPES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;
const BATCH = 32;

function toFinal(q: string, id: string, state: string, job: Job | undefined, listed: string[]): FinalJob {
  if (!job) return { q, id, state, listed };
  return {
    q,
    id,
    state,
    listed,
    name: job.name,
    returnvalue: job.returnvalue,
    ...(job.failedReason !== undefined ? { failedReason: job.failedReason } : {}),
    ...(job.finishedOn !== undefined ? { finishedOn: job.finishedOn } : {}),
    attemptsMade: job.attemptsMade,
    attemptsStarted: job.attemptsStarted,
    stalledCounter: job.stalledCounter,
    hash: dataHash(job.data),
  };
}

/** Final state of every job acknowledged on `queue` and of every job it lists. */
export async function readFinals(queue: Queue, enqueues: EnqueueEvent[], withLogs = false): Promise<FinalJob[]> {
  const listed = new Map<string, string[]>(enqueues.filter((e) => e.q === queue.name).map((e) => [e.id, []]));
  for (const type of ALL_TYPES) {
    for (const job of await queue.getJobs([type])) listed.set(job.id, [...(listed.get(job.id) ?? []), type]);
  }
  const all = [...listed.keys()];
  const out: FinalJob[] = [];
  for (let i = 0; i < all.length; i += BATCH) {
    const batch = all.slice(i, i + BATCH);
    out.push(
      ...(await Promise.all(
        batch.map(async (id) => {
          const [job, state] = await Promise.all([queue.getJob(id), queue.getJobState(id)]);
          const f = toFinal(queue.name, id, state, job, listed.get(id) ?? []);
          if (withLogs && job && (job.data as { x?: string } | null)?.x === 'logs') f.logs = await job.getLogs();
          return f;
        }),
      )),
    );
  }
  return out;
}
