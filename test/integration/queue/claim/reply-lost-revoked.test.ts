/**
 * A claim applied on the server whose reply was lost, and whose worker stayed
 * away (its session alive) longer than a lease: the leader revoked the claim
 * and another worker took the job. When the first worker comes back, its
 * receipt says the claim committed, and the ready pointer's version it reads
 * back is the other attempt's token, not its own: it must not take that
 * token for its own (both would run the job, renew one claim node, and either
 * could finish it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { request, WRITE_OPS } from '../../../helpers/fault-proxy.js';
import { countingWorker, finishedState, proxied, within } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';

test('a claim whose reply was lost and that was revoked meanwhile: its worker does not run the job taken by another', async (t) => {
  const env = await queueEnv(t, 20_000);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('claim-lost-revoked', env);
  defer(() => queue.close());
  let othersStart!: () => void;
  const otherStarted = new Promise<void>((resolve) => {
    othersStart = resolve;
  });
  let releaseOther!: () => void;
  const otherHeld = new Promise<void>((resolve) => {
    releaseOther = resolve;
  });
  // the first worker's link stays down until the other worker runs the job
  const claimed = proxy.loseReply(request(WRITE_OPS, '/claims/twice'), otherStarted);
  const first = countingWorker(defer, 'claim-lost-revoked', { ...via, housekeeping: false, lockDuration: 1000 });
  await queue.add('x', {}, { jobId: 'twice' });
  await within(claimed.fired, "the first worker's claim reply lost");
  const other = countingWorker(
    defer,
    'claim-lost-revoked',
    { ...env, lockDuration: 1000, stalledInterval: 200 },
    async (job) => {
      if (job.id === 'twice') {
        othersStart();
        await otherHeld;
      }
      return 'ok';
    },
  );
  await within(otherStarted, 'the other worker runs the job once the claim is revoked');
  // the first worker is back and has settled its claim round: it runs a job added after it
  await queue.add('x', {}, { jobId: 'after' });
  await finishedState(queue, 'after');
  releaseOther();
  assert.equal(await finishedState(queue, 'twice'), 'completed');
  await first.worker.close();
  await other.worker.close();
  assert.equal(other.runs.get('twice'), 1);
  assert.equal(first.runs.get('twice') ?? 0, 0, 'the first worker ran the job the other held, on its token');
  const stored = await queue.getJob('twice');
  assert.equal(stored?.returnvalue, 'ok');
});
