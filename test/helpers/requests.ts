import type { Session } from '@zkq/core';
import type { QueueLayout } from '@zkq/core/internal';
import { Worker } from '@zkq/worker';
import type { QueueTestEnv } from './queue.js';
import { waitFor } from './zk.js';

/**
 * Requests a zkq Worker at concurrency 1 sends per job while it works
 * through the `jobs` queued in `name`, counted on its session after a
 * warm-up of 20 jobs; every job completes, or (`fail`) fails.
 */
export async function workerRequestsPerJob(
  t: { after: (fn: () => unknown) => void },
  env: QueueTestEnv,
  name: string,
  jobs: number,
  fail = false,
): Promise<number> {
  let done = 0;
  const worker = new Worker(
    name,
    async () => {
      if (fail) throw new Error('broken');
      return 'ok';
    },
    { ...env, concurrency: 1 },
  );
  t.after(() => worker.close());
  worker.on(fail ? 'failed' : 'completed', () => {
    done++;
  });
  const session = await worker.client;
  await waitFor(() => done >= 20, { what: 'a warm-up' });
  const [requests, from] = [session.stats.requests, done];
  await waitFor(() => done >= jobs, { what: 'the backlog to be done', timeoutMs: 60_000 });
  const perJob = (session.stats.requests - requests) / (done - from);
  await worker.close();
  return perJob;
}

/**
 * Counts `session`'s read-only multis, and how many had been handed over
 * when the reply (or failure) of each multi creating a claim node of
 * `layout` came: a claim's records read in its flight are counted before it.
 */
export function countReadsAtClaims(session: Session, layout: QueueLayout): { reads: number; readsAtReply: number[] } {
  const counts = { reads: 0, readsAtReply: [] as number[] };
  const readMulti = session.readMulti.bind(session);
  session.readMulti = ((reads: Parameters<typeof readMulti>[0]) => {
    counts.reads++;
    return readMulti(reads);
  }) as typeof session.readMulti;
  const multi = session.multi.bind(session);
  session.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const claims = ops.some((op) => op.op === 'create' && op.path.startsWith(`${layout.claimsDir}/`));
    try {
      return await multi(ops);
    } finally {
      if (claims) counts.readsAtReply.push(counts.reads);
    }
  }) as typeof session.multi;
  return counts;
}
