/**
 * Removing many jobs that are not running: drain (every waiting job, and
 * delayed ones when asked) and clean (jobs of a state older than a grace).
 * Records are read before the claims are listed, and each removal deletes
 * the record at the version read, so a job claimed meanwhile is left alone;
 * jobs of flows leave their parents as they go (flow-bulk-removal.ts), and
 * each job takes the deduplication key that names it.
 */
import type { JobRecord } from '../record.js';
import type { JobType } from '../types.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { flowIdsAmong, flowRemoval, mayHoldParents } from './flow-bulk-removal.js';
import { activeIds, READ_CHUNK, type Read, readJobs } from './job-reads.js';
import { applyMoves, removal } from './moves.js';
import { publishEvents } from './publish.js';
import { flowMove, releasing, releasingAgain, removeMove } from './remove-job.js';
import { delayedPointers, type Located, pointersIn, readyPointers, waitingStateOf } from './walks.js';

/** A state `clean` accepts (BullMQ's). */
export type CleanType = Extract<
  JobType,
  'completed' | 'wait' | 'waiting' | 'active' | 'paused' | 'prioritized' | 'delayed' | 'failed'
>;

/**
 * Removes every waiting job (prioritized ones included) and, with `delayed`,
 * every delayed job; never an active, completed or failed one (BullMQ's
 * drain), each with the deduplication key that names it. Event `removed`
 * {jobId, prev} per job. Resolves with the number removed.
 */
export async function drain(store: ProtocolContext, delayed = false): Promise<number> {
  await store.init();
  let removed = 0;
  // delayed first: a job the leader promotes meanwhile is then met in ready/
  const sources = [
    ...(delayed ? [delayedPointers(store, READ_CHUNK)] : []),
    readyPointers(store, () => true, READ_CHUNK),
  ];
  const parents = await mayHoldParents(store);
  for (const source of sources) {
    for await (const chunk of source) {
      const jobs = await readJobs(store, chunk);
      const active = await activeIds(store);
      const idle = jobs.filter((j) => !active.has(j.id));
      // jobs of flows leave their parents as they go (protocol/flow-bulk-removal.ts)
      const flow = await flowIdsAmong(store, idle, parents);
      const moves = idle.map((j) =>
        releasing(store, j.stored && flow.has(j.id) ? flowMove(store, j, j.stored) : removeMove(store, j), j.stored),
      );
      removed += (await applyMoves(store, moves, undefined, releasingAgain(store))).length;
    }
  }
  return removed;
}

/**
 * BullMQ's `clean(grace, limit, type)`: removes up to `limit` (0: no limit)
 * jobs of `type` older than `grace` ms — by finishedOn for completed and
 * failed jobs, by timestamp (creation) for the others — and resolves with
 * their ids. `wait`, `waiting` and `paused` mean the waiting jobs without
 * priority; `active` removes nothing, since a claimed job is never removed.
 * A removed job takes the deduplication key that names it (ttl or not, as
 * BullMQ's clean). Event `cleaned` {count} per transaction.
 */
export async function clean(
  store: ProtocolContext,
  grace: number,
  limit: number,
  type: CleanType = 'completed',
): Promise<string[]> {
  await store.init();
  const { layout } = store;
  const cutoff = Date.now() - Math.max(0, grace);
  const max = limit > 0 ? limit : Number.POSITIVE_INFINITY;
  const finished = type === 'completed' || type === 'failed';
  let source: AsyncIterable<Located[]>;
  if (finished) {
    source = pointersIn(store, layout.finishedDir(type), READ_CHUNK);
  } else if (type === 'delayed') {
    source = delayedPointers(store, READ_CHUNK);
  } else if (type === 'prioritized') {
    source = readyPointers(store, (lane) => waitingStateOf(lane) === 'prioritized', READ_CHUNK);
  } else if (type === 'wait' || type === 'waiting' || type === 'paused') {
    source = readyPointers(store, (lane) => waitingStateOf(lane) === 'waiting', READ_CHUNK);
  } else {
    return []; // 'active': claimed jobs are never removed
  }
  const removed: string[] = [];
  const parents = await mayHoldParents(store);
  for await (const chunk of source) {
    const jobs = await readJobs(store, chunk);
    const active = finished ? new Set<string>() : await activeIds(store);
    const due = jobs.filter((j): j is Read & { stored: StoredJob } => {
      if (!j.stored || active.has(j.id)) return false;
      const r = j.stored.record;
      const age = finished ? (r.finishedOn ?? r.timestamp) : r.timestamp;
      return age <= cutoff && inCleanState(r, type);
    });
    // jobs of flows leave their parents as they go (protocol/flow-bulk-removal.ts)
    const flow = await flowIdsAmong(store, due, parents);
    const moves = due
      .slice(0, Math.max(0, max - removed.length))
      .map((j) =>
        releasing(
          store,
          flow.has(j.id)
            ? flowRemoval(store, { ...j, stored: j.stored }, [])
            : removal(store, { id: j.id, version: j.version, pointer: j.pointer }, []),
          j.stored,
        ),
      );
    removed.push(...(await applyMoves(store, moves, undefined, releasingAgain(store))));
    if (removed.length >= max) break;
  }
  if (removed.length > 0)
    await publishEvents(store, [{ event: 'cleaned', count: String(removed.length), ts: Date.now() }]);
  return removed;
}

function inCleanState(r: JobRecord, type: CleanType): boolean {
  if (type === 'completed' || type === 'failed' || type === 'delayed') return r.state === type;
  return r.state === 'waiting' || r.state === 'active'; // active in the record, unclaimed: waiting again
}
