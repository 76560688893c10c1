/**
 * A lost lease is reported with its token. A renewal of a job's first
 * attempt that returns late (after that attempt failed, the job went back to
 * waiting and the same worker claimed it again) reports the first attempt
 * lost: that must not abort the second attempt, which holds its own claim.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Op } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

test("a late renewal of a job's first attempt does not abort its second attempt on the same worker", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('late-renewal', env);
  t.after(() => queue.close());
  const heldRenewal = gate(); // the first attempt's renewal is held back
  const release = gate(); // and sent once the second attempt runs
  let settled = false;
  let renewalsAfter = 0;
  t.after(() => release.open());

  const aborted: boolean[] = [];
  const worker = new Worker(
    'late-renewal',
    async (job, _token, signal) => {
      if (job.attemptsMade === 0) {
        await heldRenewal.promise;
        throw new Error('first attempt fails');
      }
      release.open();
      // a renewal sent after the late one settled: the late one's report was handled by then
      await waitFor(() => renewalsAfter > 0, { what: 'a renewal after the late one' });
      aborted.push(signal?.aborted ?? false);
      return 'second';
    },
    { ...env, concurrency: 1, housekeeping: false, lockDuration: 60_000, lockRenewTime: 100 },
  );
  t.after(() => worker.close());
  const lost: string[] = [];
  worker.on('lost', (job) => lost.push(job.id as string));
  const session = await worker.client;
  const multi = session.multi.bind(session);
  let held = false;
  session.multi = ((ops: readonly Op[]) => {
    const renewal = ops.some((op) => op.op === 'setData' && op.path.includes('/claims/'));
    if (!renewal) return multi(ops);
    if (held) {
      if (settled) renewalsAfter++;
      return multi(ops);
    }
    held = true;
    heldRenewal.open();
    return release.promise
      .then(() => multi(ops))
      .finally(() => {
        settled = true;
      });
  }) as typeof session.multi;

  const completed: string[] = [];
  worker.on('completed', (j) => completed.push(j.id as string));
  const job = await queue.add('j', {}, { attempts: 2 });
  // the second attempt ends either way: completed, or (aborted by the late report) lost
  await waitFor(() => completed.length + lost.length > 0, { what: 'the second attempt ended' });
  assert.deepEqual(lost, [], 'no attempt reported lost');
  assert.deepEqual(aborted, [false], "the second attempt's signal was not fired");
  assert.equal((await queue.getJob(job.id as string))?.returnvalue, 'second');
});
