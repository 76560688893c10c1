/**
 * A claim-less finish (an immediate retry) followed by another worker's
 * claim of the same job leaves the new owner's claim alone; the race is
 * forced by a fault injected at a session's request boundary
 * (helpers/session-faults.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { deleteClaim, holdAfterNextCommit } from '../../../helpers/session-faults.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

/** A promise with its resolve function, to hold a processor mid-job. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

test("a claim-less finish (immediate retry) leaves the next owner's claim alone", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stale-claims', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  const job = await queue.add('x', {}, { attempts: 2 }); // no backoff: the retry is waiting at once
  const opts = { ...env, housekeeping: false, lockDuration: 60_000 };
  const firstStarted = gate();
  const firstRelease = gate();
  const a = new Worker(
    'stale-claims',
    async () => {
      firstStarted.open();
      await firstRelease.promise;
      throw new Error('first attempt fails');
    },
    opts,
  );
  t.after(() => a.close());
  await firstStarted.promise;
  await a.pause(true); // A claims nothing more
  const secondStarted = gate();
  const secondRelease = gate();
  let secondRuns = 0;
  const lost: string[] = [];
  let b: Worker | undefined;
  t.after(() => {
    secondRelease.open(); // an assertion failed while B was held
    return b?.close();
  });
  // A's claim vanishes, as with its session's expiry (nobody else runs yet, so the job stays A's). Once
  // A's finish (a retry) commits, B starts and claims the job before A sends anything more.
  await deleteClaim(plain, 'stale-claims', job.id);
  holdAfterNextCommit(await a.client, async () => {
    b = new Worker(
      'stale-claims',
      async () => {
        secondRuns++;
        secondStarted.open();
        await secondRelease.promise;
        return 'second';
      },
      opts,
    );
    b.on('lost', (j) => lost.push(j.id));
    await secondStarted.promise;
  });
  const aReported = nextEvent(a, 'failed');
  firstRelease.open();
  await aReported; // A's finish is written, and whatever A did after it is done
  await secondStarted.promise;
  const active = (await queue.getJobCounts('active')).active;
  assert.equal(active, 1, 'B runs the job, yet its claim is gone');
  assert.equal(await queue.remove(job.id), 0, 'the job B runs must not be removable');
  secondRelease.open();
  await waitFor(async () => (await queue.getJobState(job.id)) === 'completed', { what: 'B completed the job' });
  assert.equal((await queue.getJob(job.id))?.returnvalue, 'second');
  assert.deepEqual(lost, []);
  assert.equal(secondRuns, 1);
});
