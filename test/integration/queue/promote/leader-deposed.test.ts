/**
 * A leader deposed and re-elected in the middle of a promotion runs one
 * promoter; the deposition is forced between two of the promotion's requests
 * (helpers/session-faults.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { deleteElectionNodes, electionNodes, watchTransactions } from '../../../helpers/session-faults.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a leader deposed and re-elected in the middle of a promotion runs one promoter', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('re-elected', env);
  t.after(() => queue.close());
  const plain = await prefixSession(t, env);
  const worker = new Worker('re-elected', async () => 'ok', { ...env, stalledInterval: 60_000 });
  t.after(() => worker.close());
  await worker.pause(true); // promotion only: nothing is claimed
  await waitFor(() => worker.isLeader, { what: 'the worker leads' });
  const count = 2000;
  let deposed: string[] = [];
  // The first promotion commits; before the leader hears so, it is deposed and re-elected.
  const watched = watchTransactions(await worker.client, 're-elected', async () => {
    deposed = await deleteElectionNodes(plain, 're-elected');
    await waitFor(
      async () => worker.isLeader && (await electionNodes(plain, 're-elected')).some((n) => !deposed.includes(n)),
      { what: 're-elected' },
    );
  });
  await queue.addBulk(Array.from({ length: count }, () => ({ name: 'd', data: {}, opts: { delay: 1000 } })));
  await waitFor(async () => (await queue.getJobCounts('delayed')).delayed === 0, {
    timeoutMs: 60_000,
    what: 'every job promoted',
  });
  assert.equal(deposed.length, 1, 'the leader was deposed during the promotion');
  assert.equal((await queue.getJobCounts('waiting')).waiting, count);
  assert.equal(watched.conflicts(), 0, 'promotions that collided with promotions of the same leader');
});
