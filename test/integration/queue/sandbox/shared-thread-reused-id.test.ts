/**
 * Tokens are ready-pointer versions, so a job added again under the id of a
 * removed one is claimed at the same fencing token as the first job was (the
 * Job's `token` string also names the pointer, so it differs). On a shared thread
 * (`jobsPerThread` > 1) the first job's processor may still run after its
 * attempt ended (a cancel or a lost claim only fires its signal; cleanup takes
 * its time, or it ignores the signal). A thread that tells its running tasks
 * apart by job id and token then mixes the two attempts up: the first run's
 * end forgets the second run's signal (a later cancel or lost claim never
 * reaches it, so it runs on after its job ended), and the first run's
 * progress is published as the second job's. Runs are told apart by a key
 * unique in the pool, for aborts and for progress alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { JobProgress } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { reportChannel } from '../../../helpers/thread-reports.js';
import { fencing } from '../../../helpers/tokens.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/lingering.mjs', import.meta.url));

interface Report {
  run: number;
  id: string;
  token: string;
  event: 'started' | 'aborted' | 'progressed' | 'ended';
}

function reports(t: { after(fn: () => unknown): void }) {
  const { name, seen, post } = reportChannel<Report>(t, 'linger');
  return {
    name,
    seen,
    next: (run: number, event: Report['event'], timeoutMs?: number) =>
      waitFor(() => seen.find((r) => r.run === run && r.event === event), {
        what: `${event} of run ${run}`,
        ...(timeoutMs ? { timeoutMs } : {}),
      }),
    say: (m: { run: number; progress?: unknown; end?: boolean }) => post(m),
  };
}

/** Runs job `x` once, cancels it, and starts it again under the same id while the first run lingers. */
async function twoRunsOfX(t: Parameters<typeof queueEnv>[0] & { after(fn: () => unknown): void }) {
  const env = await queueEnv(t);
  const queue = new Queue('reused', env);
  t.after(() => queue.close());
  const r = reports(t);
  const worker = new Worker('reused', PROCESSOR, { ...env, concurrency: 2, threads: 1, housekeeping: false });
  worker.on('error', () => undefined);
  t.after(() => worker.close(true)); // ends the threads, runs still going with them
  const opts = { jobId: 'x', attempts: 1, removeOnFail: true };
  await queue.add('x', { run: 1, report: r.name }, opts);
  const first = await r.next(1, 'started');
  assert.equal(await queue.cancelJob('x', 'first run cancelled'), true);
  await r.next(1, 'aborted');
  await waitFor(async () => (await queue.getJob('x')) === undefined, { what: 'x removed' });

  await queue.add('x', { run: 2, report: r.name }, opts);
  const second = await r.next(2, 'started');
  assert.equal(fencing(second.token), fencing(first.token), 'the job added again is claimed at the same token');
  return { queue, worker, r };
}

test("a run of a job added again under a lingering run's id and token can still be cancelled", async (t) => {
  const { queue, r } = await twoRunsOfX(t);
  r.say({ run: 1, end: true });
  await r.next(1, 'ended');

  assert.equal(await queue.cancelJob('x', 'second run cancelled'), true);
  await waitFor(async () => (await queue.getJob('x')) === undefined, { what: 'x failed and removed again' });
  // the job has ended: its processor must have been told to stop
  await r.next(2, 'aborted', 5000);
});

test('progress of a lingering run is not published as that of a job added again under its id', async (t) => {
  const { worker, r } = await twoRunsOfX(t);
  const published: JobProgress[] = [];
  worker.on('progress', (job, p) => {
    if (job.id === 'x') published.push(p);
  });
  // the two runs post on the same thread port, in this order
  r.say({ run: 1, progress: 'from the cancelled run' });
  await r.next(1, 'progressed');
  r.say({ run: 2, progress: 'from the second run' });
  await r.next(2, 'progressed');
  await waitFor(() => published.includes('from the second run'), { what: "the second run's progress" });
  assert.deepEqual(published, ['from the second run']);
});
