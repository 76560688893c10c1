/**
 * A finish written without its claim (the claim had vanished with an expired
 * session) may meet the re-claim the renewer made meanwhile: it is then
 * written with its claim again, deleting that re-claim in its own
 * transaction (finish.ts `finishOps`), fenced by the pointer at the token,
 * rather than removing it after. That finish is not sent again as it was
 * when its reply is lost with the session: its receipt says it committed,
 * and `claims/<id>` may by then be the claim of the job added again under
 * its id, by another worker.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError } from '@zkq/core';
import { finishJobs, leaseOf, renewLeases } from '@zkq/core/internal';
import { claimedThenExpired, otherHoldsX, readdedAndClaimed, twoWorkers } from '../../../helpers/claim-race.js';
import { expire } from '../../../helpers/zk.js';

const OPTS = { workerId: 'mine', lockDuration: 600_000 };

test('a finish taking its re-claim, lost with its session, is not sent again over the claim made since', async (t) => {
  const { env, queue, mine, other, store, layout } = await twoWorkers(t, 'reclaim-removed');
  const job = await claimedThenExpired(store, mine, OPTS);

  const multi = mine.multi.bind(mine);
  let stage = 'finish';
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const finishes = ops.some((op) => op.op === 'delete' && op.path === layout.job('x'));
    // without its claim, the finish creates and deletes the claim node (only while none is there)
    const withClaim =
      ops.some((op) => op.op === 'delete' && op.path === layout.claim('x')) &&
      !ops.some((op) => op.op === 'create' && op.path === layout.claim('x'));
    if (stage === 'finish' && finishes && !withClaim) {
      // the finish without its claim: the renewer re-creates the claim just before it goes out
      stage = 'reclaim';
      assert.deepEqual(await renewLeases(store, [leaseOf(job)], OPTS), []);
      stage = 'take';
    } else if (stage === 'take' && finishes && withClaim) {
      // the finish with the re-claim applies; its reply is lost with its connection and the session;
      // the job is added again under its id, and another worker claims it
      stage = 'staged';
      await multi(ops);
      await expire(mine, env.connection.connectionString);
      await readdedAndClaimed(queue, other, layout);
      throw new ConnectionLossError(ops[0]?.path);
    }
    return multi(ops);
  }) as typeof mine.multi;

  const [result] = await finishJobs(store, [{ job, outcome: { kind: 'completed', returnvalue: null, remove: true } }]);
  assert.deepEqual(result, { ok: true });
  assert.equal(stage, 'staged', 'the re-claim was made, then the finish taking it lost with the session');
  await otherHoldsX(other, layout);
});
